// Soak: many real-model runs in one tab on the CPU path (the sampling workers), of mixed
// samplers, compare mode, and Stop pressed in the middle of some, printing every so many
// runs the page's JS heap and wasm memory, each worker's wasm memory, and the runs' times.
// Asserted: no run ends in an error, and after warm-up (once through every kind of run,
// and at least the first quarter of the runs) memory stays within a stated bound: the wasm memories (which never shrink) grow by at
// most 16 MB each, the page's JS heap by at most 32 MB. The times are printed, not
// asserted (speed is a benchmark's claim). CI runs the short form (12 runs); `cargo xtask
// soak` runs 200 (`STRAIT_SOAK_RUNS`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_URL, unlessCrash, waitForPhase, withPage } from './lib.mjs';

const RUNS = Number(process.env.STRAIT_SOAK_RUNS ?? 12);
const EVERY = Math.max(1, Math.floor(RUNS / 8));
const LOAD_MS = 300_000;
const RUN_MS = 120_000;
const MB = 1024 * 1024;
const WASM_GROWTH = 16 * MB;
const HEAP_GROWTH = 32 * MB;

// The runs cycle through these (seed = the run's number, so no two are the same run).
const PLAN = [
  { method: 'lcd', n: 3, maxTokens: 6 },
  { method: 'cars', n: 2, maxTokens: 6 },
  { method: 'smc-gcd', n: 1, particles: 4, maxTokens: 6 },
  { compare: true, maxTokens: 6 },
  { method: 'mcmc-uniform', n: 1, steps: 3, maxTokens: 6 },
  { method: 'lm', n: 40, maxTokens: 24, stop: true },
];

async function setForm(page, f, seed) {
  // (Compare mode shows its own list of samplers instead of the sampler select.)
  await page.setChecked('#pg-compare-mode', Boolean(f.compare));
  if (!f.compare) await page.selectOption('#pg-method', f.method ?? 'lcd');
  for (const [key, id] of [['n', '#pg-n'], ['steps', '#pg-steps'], ['particles', '#pg-particles'], ['maxTokens', '#pg-max-tokens']]) {
    if (f[key] !== undefined) await page.fill(id, String(f[key]));
  }
  await page.fill('#pg-seed', String(seed));
  // Compare mode: its samplers side by side on an equal budget of model calls.
  if (f.compare) await page.fill('#pg-budget', '40');
}

/** What the tab holds: the page's JS heap (precise, through the DevTools protocol), the
 * page's wasm memory and each worker's. */
async function memory(page, cdp) {
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  const wasm = await page.evaluate(() => window.__straitWasmBytes?.() ?? 0);
  const workers = await Promise.all(page.workers().map((w) => w.evaluate(() => self.__straitWasmBytes?.() ?? 0).catch(() => 0)));
  return { heap: usedSize, wasm, workers: workers.filter((b) => b > 0) };
}

const mb = (b) => (b / MB).toFixed(1);

test(`soak: ${RUNS} real-model runs in one tab (mixed samplers, compare mode, Stop) hold their memory`, async () => {
  await withPage('soak', { webgpu: false, openDetails: true }, async (page) => {
    const cdp = await page.context().newCDPSession(page);
    await page.goto(`${BASE_URL}?backend=cpu`);
    await waitForPhase(page, ['ready'], LOAD_MS);
    await unlessCrash(page, page.waitForFunction(() => document.querySelector('#pg-worker')?.dataset.state === 'ready',
      null, { timeout: LOAD_MS, polling: 250 }));
    await page.selectOption('#pg-model', 'real');
    await page.fill('#pg-grammar', '(yes|no|maybe)');
    await page.selectOption('#pg-kind', 'regex');
    await page.fill('#pg-prompt', 'Is the sea blue? Answer yes, no or maybe.');
    await page.setChecked('#pg-chat', true);
    await page.fill('#pg-speed', '10');
    const times = [];
    const marks = [];
    for (let r = 1; r <= RUNS; r++) {
      const f = PLAN[(r - 1) % PLAN.length];
      await setForm(page, f, r);
      await page.fill('#pg-grammar', f.method === 'lm' ? '[a-z ]{1,80}' : '(yes|no|maybe)');
      const before = Number(await page.getAttribute('#pg-status', 'data-run'));
      const t0 = Date.now();
      await page.click('#pg-run');
      if (f.stop) {
        await unlessCrash(page, page.waitForFunction((n) => Number(document.querySelector('#pg-status').dataset.run) > n
          && Number(document.querySelector('#pg-status').dataset.items) > 2, before, { timeout: RUN_MS, polling: 50 }));
        await page.click('#pg-stop');
      }
      await unlessCrash(page, page.waitForFunction((n) => Number(document.querySelector('#pg-status').dataset.run) > n
        && ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
      before, { timeout: RUN_MS, polling: 50 }));
      times.push(Date.now() - t0);
      const s = await page.evaluate(() => ({ ...document.querySelector('#pg-status').dataset, text: document.querySelector('#pg-status').textContent }));
      assert.notEqual(s.state, 'error', `run ${r} (${JSON.stringify(f)}): ${s.text}`);
      if (f.stop) assert.ok(['stopped', 'done'].includes(s.state), s.text);
      if (r % EVERY === 0 || r === 1) {
        // Wait for the workers to settle, so a mark never falls mid-run.
        await page.waitForFunction(() => document.querySelector('#pg-worker').dataset.busy === '0', null, { timeout: RUN_MS });
        const m = await memory(page, cdp);
        const recent = times.slice(-EVERY);
        const mean = recent.reduce((a, b) => a + b, 0) / recent.length;
        marks.push({ run: r, ...m, mean_ms: Math.round(mean) });
        console.log(`# soak run ${r}: page JS heap ${mb(m.heap)} MB, page wasm ${mb(m.wasm)} MB, workers' wasm ${m.workers.map(mb).join(' + ')} MB; last ${recent.length} runs ${Math.round(mean)} ms each`);
      }
    }
    // After warm-up (once through every kind of run, and at least a quarter of the runs):
    // that mark against the last one.
    const warm = marks.find((m) => m.run >= Math.max(PLAN.length, RUNS / 4)) ?? marks[0];
    const last = marks[marks.length - 1];
    console.log(`# figure: soak ${RUNS} runs: ${JSON.stringify({ warm, last, first_to_last_run_time: +(last.mean_ms / marks[0].mean_ms).toFixed(2) })}`);
    assert.ok(last.wasm - warm.wasm <= WASM_GROWTH, `the page's wasm memory grew ${mb(last.wasm - warm.wasm)} MB after warm-up`);
    assert.ok(last.heap - warm.heap <= HEAP_GROWTH, `the page's JS heap grew ${mb(last.heap - warm.heap)} MB after warm-up`);
    assert.equal(last.workers.length, warm.workers.length, 'the same workers at the end');
    last.workers.forEach((b, i) => assert.ok(b - warm.workers[i] <= WASM_GROWTH,
      `worker ${i + 1}'s wasm memory grew ${mb(b - warm.workers[i])} MB after warm-up`));
  });
});
