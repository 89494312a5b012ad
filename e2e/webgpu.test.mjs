// The page on WebGPU: choose the WebGPU backend explicitly (`?backend=webgpu` through the
// page's own select), load SmolLM2 onto Chromium's SwiftShader WebGPU adapter, sample with
// `lcd` under (yes|no|maybe) and check the output with JavaScript's own RegExp; then the
// same decode on the CPU (wasm) backend, and print both decode rates. In between, the
// WebGPU device is destroyed and the model reloaded from the page's offer.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  ARTIFACTS, BASE_URL, finishQuickRun, fullMatch, sharedBrowser, startQuickRun, unlessCrash, waitForPhase,
} from './lib.mjs';

// SwiftShader runs WebGPU on the CPU: small token budgets.
const LOAD_MS = 240_000;
const RUN_MS = 150_000;
const YNM = '(yes|no|maybe)';
// Short prompts without the chat template (whose system prompt is most of the tokens):
// prefill on SwiftShader is the slow part of each WebGPU run.
const YNM_PROMPT = 'Is the sky blue? yes, no or maybe:';
const RATE_PROMPT = 'One sentence about the sea:';
const RATE_TOKENS = 6;

const shared = sharedBrowser('webgpu', 'decode tokens/s in headless Chromium');
const rates = shared.figures;
let loaded = false;
let gpuLcd;

/** Runs `body(page)` as `shared.step` does; once the model failed to load on WebGPU,
 *  later steps fail at once. */
async function step(body, { needsModel = true } = {}) {
  if (needsModel && !loaded) throw new Error('the model did not load on WebGPU (see the first test)');
  return shared.step(body);
}

/** Starts a run without the chat template (see the prompts above). */
const start = (page, run) => startQuickRun(page, { ...run, chat: false });
const finish = (page) => finishQuickRun(page, RUN_MS);
const rate = (stats) => Number(stats.match(/([0-9.]+) tokens\/s/)?.[1] ?? NaN);

/** Loads the page, picks `backend` in the select (the page reloads with it), waits for the model. */
async function loadOn(page, backend) {
  await page.goto(BASE_URL);
  await page.waitForSelector('#backend');
  const nav = page.waitForURL((u) => u.searchParams.get('backend') === backend, { timeout: 30_000 });
  await page.selectOption('#backend', backend);
  await nav;
  const t0 = Date.now();
  await waitForPhase(page, ['ready'], LOAD_MS);
  return Date.now() - t0;
}

describe('the page runs SmolLM2 on WebGPU', () => {
  it('by default (auto) picks the CPU (wasm) path on a software adapter like SwiftShader', async () => {
    await step(async (page) => {
      await page.goto(BASE_URL);
      await waitForPhase(page, ['ready'], LOAD_MS);
      assert.equal(await page.inputValue('#backend'), 'auto');
      const gpu = await page.locator('#webgpu-ok').textContent();
      const backend = await page.getAttribute('#backend-info', 'data-backend');
      console.log(`auto on ${gpu}: ${backend}`);
      if (/swiftshader/i.test(gpu)) assert.equal(backend, 'cpu');
    }, { needsModel: false });
  });

  it('loads the model onto the WebGPU adapter when WebGPU is chosen', async () => {
    await step(async (page) => {
      const ms = await loadOn(page, 'webgpu');
      const backend = await page.getAttribute('#backend-info', 'data-backend');
      const info = await page.locator('#backend-info').textContent();
      console.log(`loaded on ${backend} in ${ms} ms: ${info}`);
      assert.equal(backend, 'webgpu', info);
      assert.match(info, /WebGPU \(.+, [0-9.]+ MB of GPU buffers\)/);
      // The page reports the adapter (SwiftShader here).
      assert.match(info, /swiftshader|google|adapter/i);
      assert.equal(await page.inputValue('#backend'), 'webgpu');
      loaded = true;
    }, { needsModel: false });
  });

  it('lcd under (yes|no|maybe) on WebGPU gives one of the three words', async () => {
    await step(async (page) => {
      await start(page, { prompt: YNM_PROMPT, regex: YNM, method: 'lcd', maxTokens: 4 });
      const r = await finish(page);
      console.log(`webgpu lcd: ${JSON.stringify(r.text)} · ${r.stats} · ${r.wallMs} ms`);
      assert.equal(r.state, 'done', r.message);
      assert.ok(fullMatch(YNM, r.text), `lcd output ${JSON.stringify(r.text)} is not yes, no or maybe`);
      // On WebGPU the masks come from the WGSL kernel over the tensorized automaton and the
      // draw from the masked-sampling kernel (the CPU run below must agree token by token).
      assert.match(r.message, /masks computed on WebGPU/);
      await page.screenshot({ path: join(ARTIFACTS, 'webgpu-lcd.png'), fullPage: true });
      gpuLcd = r;
    });
  });

  it('the playground samples the real model on WebGPU on the page\'s thread (no worker)', async () => {
    await step(async (page) => {
      const w = page.locator('#pg-worker');
      assert.equal(await w.getAttribute('data-state'), 'off');
      assert.match(await w.textContent(), /WebGPU/);
      await page.selectOption('#pg-model', 'real');
      await page.fill('#pg-grammar', YNM);
      await page.selectOption('#pg-kind', 'regex');
      await page.fill('#pg-prompt', YNM_PROMPT);
      await page.setChecked('#pg-chat', false);
      await page.selectOption('#pg-method', 'lcd');
      await page.setChecked('#pg-compare-mode', false);
      await page.fill('#pg-n', '1');
      await page.fill('#pg-max-tokens', '4');
      await page.fill('#pg-speed', '10');
      const runs = Number(await page.getAttribute('#pg-status', 'data-run'));
      const t0 = Date.now();
      await page.click('#pg-run');
      await unlessCrash(page, page.waitForFunction(
        (n) => Number(document.querySelector('#pg-status').dataset.run) > n
          && ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
        runs, { timeout: RUN_MS, polling: 250 }));
      const s = await page.evaluate(() => ({
        state: document.querySelector('#pg-status').dataset.state,
        text: document.querySelector('#pg-status').textContent,
        drawn: [...document.querySelectorAll('#view-results .output-row')]
          .filter((r) => Number(r.dataset.count) > 0).map((r) => r.dataset.text),
      }));
      assert.equal(s.state, 'done', s.text);
      assert.equal(s.drawn.length, 1);
      assert.ok(fullMatch(YNM, s.drawn[0]), `playground lcd drew ${JSON.stringify(s.drawn[0])}`);
      console.log(`playground lcd on WebGPU: ${JSON.stringify(s.drawn[0])} in ${Date.now() - t0} ms`);
      await page.screenshot({ path: join(ARTIFACTS, 'webgpu-playground.png'), fullPage: true });
    });
  });

  it('a lost WebGPU device offers to reload the model, which then loads on a new device', async () => {
    await step(async (page) => {
      // Destroy the device as a driver reset would (the page's test hook).
      assert.equal(await page.evaluate(() => window.__straitLoseGpuDevice()), true);
      await waitForPhase(page, ['gpu-lost'], 10_000);
      const msg = await page.locator('#gpu-lost').textContent();
      console.log(`device lost: ${msg}`);
      assert.match(msg, /WebGPU device was lost/);
      await page.screenshot({ path: join(ARTIFACTS, 'webgpu-device-lost.png'), fullPage: true });
      // Generate is refused until the model is back.
      assert.equal(await page.isDisabled('#generate'), true);
      const t0 = Date.now();
      await page.click('#reload-model');
      await waitForPhase(page, ['ready'], LOAD_MS);
      assert.equal(await page.getAttribute('#backend-info', 'data-backend'), 'webgpu');
      console.log(`reloaded on a new WebGPU device in ${Date.now() - t0} ms`);
    });
  });

  it('decodes on WebGPU and on the CPU (wasm), prints both rates; the CPU lcd run agrees with the WebGPU one', async () => {
    await step(async (page) => {
      await start(page, { prompt: RATE_PROMPT, regex: '.*', method: 'lm', maxTokens: RATE_TOKENS });
      const g = await finish(page);
      console.log(`webgpu lm: ${JSON.stringify(g.text)} · ${g.stats} · ${g.wallMs} ms`);
      assert.equal(g.state, 'done', g.message);
      rates.webgpu_swiftshader = rate(g.stats);

      await loadOn(page, 'cpu');
      assert.equal(await page.getAttribute('#backend-info', 'data-backend'), 'cpu');
      await start(page, { prompt: RATE_PROMPT, regex: '.*', method: 'lm', maxTokens: RATE_TOKENS });
      const c = await finish(page);
      console.log(`cpu lm: ${JSON.stringify(c.text)} · ${c.stats} · ${c.wallMs} ms`);
      assert.equal(c.state, 'done', c.message);
      rates.cpu_wasm = rate(c.stats);
      console.log(`p per token: webgpu ${JSON.stringify(g.tokens)} cpu ${JSON.stringify(c.tokens)}`);

      // The same lcd run on the CPU: the same tokens with the same probabilities.
      await start(page, { prompt: YNM_PROMPT, regex: YNM, method: 'lcd', maxTokens: 4 });
      const l = await finish(page);
      assert.equal(l.state, 'done', l.message);
      assert.deepEqual(l.tokens.map((t) => t.text), gpuLcd.tokens.map((t) => t.text));
      l.tokens.forEach((t, i) => {
        const q = gpuLcd.tokens[i].p;
        assert.ok(Math.abs(t.p - q) <= 1e-3 * Math.max(t.p, q) + 1e-6, `token ${i}: cpu p ${t.p} vs webgpu p ${q}`);
      });
      console.log(`webgpu ${rates.webgpu_swiftshader} tokens/s vs cpu ${rates.cpu_wasm} tokens/s`);
    });
  });
});
