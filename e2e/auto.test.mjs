// `?backend=auto` on a hardware adapter times WebGPU against the CPU path once per adapter
// and model, keeps the faster, remembers the figures and says why in one line; a WebGPU path
// that fails to compile falls back to the CPU with a message. SwiftShader is a software
// adapter (auto skips the timing there), so the page's test hook `window.__straitAuto`
// treats it as hardware (measured as it is: the CPU wins there) and forces each branch:
// `cpuFactor` scales the CPU's measured time, a remembered timing is overwritten, `breakGpu`
// makes a kernel fail to compile.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, BASE_URL, sharedBrowser, waitForPhase } from './lib.mjs';

const LOAD_MS = 240_000;
const PREFIX = 'strait.auto.v1|';

// Each test puts its hooks in sessionStorage; the init script copies them to the page
// before it runs.
const shared = sharedBrowser('auto', 'auto', {
  setup: (b) => b.context.addInitScript(() => {
    try {
      const h = sessionStorage.getItem('strait-test-auto');
      if (h) window.__straitAuto = JSON.parse(h);
    } catch {}
  }),
});

/** Loads the page (auto) with `hooks`; returns where the model runs and the page's notes. */
async function loadAuto(page, hooks) {
  // A plain 404 of the page's origin, where the hooks are stored without starting a load.
  await page.goto(new URL('strait-e2e-hooks', BASE_URL).href);
  await page.evaluate((h) => sessionStorage.setItem('strait-test-auto', JSON.stringify(h)), hooks);
  const t0 = Date.now();
  await page.goto(BASE_URL);
  await waitForPhase(page, ['ready'], LOAD_MS);
  const r = {
    ms: Date.now() - t0,
    backend: await page.getAttribute('#backend-info', 'data-backend'),
    notes: await page.$$eval('.note', (ns) => ns.map((n) => n.textContent)),
    stored: await page.evaluate((p) => Object.keys(localStorage).filter((k) => k.startsWith(p))
      .map((k) => [k, localStorage.getItem(k)]), PREFIX),
  };
  console.log(`auto with ${JSON.stringify(hooks)}: ${r.backend} in ${r.ms} ms; ${JSON.stringify(r.notes)}`);
  return r;
}

const chose = (notes) => notes.find((n) => n.startsWith('Auto chose')) ?? '';

const forget = (page) => page.evaluate((p) => Object.keys(localStorage).filter((k) => k.startsWith(p))
  .forEach((k) => localStorage.removeItem(k)), PREFIX);

describe('auto decides by measurement on a hardware adapter', () => {
  it('times both paths as measured (no factor) and runs where its line says', async () => {
    await shared.step(async (page) => {
      const r = await loadAuto(page, { hardware: true });
      const line = chose(r.notes);
      assert.match(line, /^Auto chose (WebGPU \(.+\)|the CPU \(wasm\)): [0-9.]+ ms a token against [0-9.]+ ms (on the CPU \(wasm\)|on WebGPU) \(measured just now/);
      assert.equal(r.backend, line.startsWith('Auto chose WebGPU') ? 'webgpu' : 'cpu');
      assert.equal(r.stored.length, 1, JSON.stringify(r.stored));
      assert.ok(r.stored[0][1].split(' ').map(Number).every((v) => v > 0), r.stored[0][1]);
      await forget(page);
    });
  });

  it('times both paths once, keeps the faster (WebGPU here, the CPU slowed by the hook) and says why', async () => {
    await shared.step(async (page) => {
      const r = await loadAuto(page, { hardware: true, cpuFactor: 1000 });
      assert.equal(r.backend, 'webgpu');
      assert.match(chose(r.notes), /^Auto chose WebGPU \(.+\): [0-9.]+ ms a token against [0-9.]+ ms on the CPU \(wasm\) \(measured just now/);
      assert.equal(r.stored.length, 1, JSON.stringify(r.stored));
      const [gpu, cpu] = r.stored[0][1].split(' ').map(Number);
      assert.ok(gpu > 0 && cpu > gpu, r.stored[0][1]);
      await page.screenshot({ path: join(ARTIFACTS, 'auto-webgpu.png'), fullPage: true });
    });
  });

  it('remembers the timing: the next visit does not measure, and a CPU-faster figure picks the CPU', async () => {
    await shared.step(async (page) => {
      const again = await loadAuto(page, { hardware: true });
      assert.equal(again.backend, 'webgpu');
      assert.match(chose(again.notes), /remembered/);
      // The same adapter and model, remembered as faster on the CPU.
      await page.evaluate(([k]) => localStorage.setItem(k, '80 20'), again.stored[0]);
      const r = await loadAuto(page, { hardware: true });
      assert.equal(r.backend, 'cpu');
      assert.equal(chose(r.notes),
        'Auto chose the CPU (wasm): 20.0 ms a token against 80.0 ms on WebGPU (measured on an earlier visit and remembered; ?backend=webgpu forces the other).');
    });
  });

  it('a WebGPU path that fails to compile falls back to the CPU with a message', async () => {
    await shared.step(async (page) => {
      await forget(page);
      const r = await loadAuto(page, { hardware: true, breakGpu: true });
      assert.equal(r.backend, 'cpu');
      assert.ok(r.notes.some((n) => /^WebGPU could not run the model on .+ it runs on the CPU \(wasm\)\.$/.test(n)),
        JSON.stringify(r.notes));
      assert.equal(r.stored.length, 0, 'nothing remembered from a failed WebGPU path');
      await page.screenshot({ path: join(ARTIFACTS, 'auto-broken-webgpu.png'), fullPage: true });
    });
  });
});
