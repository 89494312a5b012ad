// The model runs on the page's thread. Within each block of a CPU forward pass it pauses
// (a MessageChannel task) every 8 ms so the page keeps painting; `?pause=off` turns that off.
// This runs the same seeded generation both ways, counts animation frames while it runs,
// and prints frames per second and tokens per second side by side. Asserted: both runs
// finish with the same tokens (pausing changes when work happens, never what is computed).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, BASE_URL, launch, unlessCrash, waitForPhase } from './lib.mjs';

const LOAD_MS = 180_000;
const RUN_MS = 180_000;
const PROMPT = 'Write one sentence about the sea.';
const TOKENS = 8;

let b;
let failed = false;
const figures = {};

before(async () => {
  b = await launch({ webgpu: true });
});

after(async () => {
  if (failed) {
    await b.page.screenshot({ path: join(ARTIFACTS, 'smoothness-failure.png'), fullPage: true }).catch(() => {});
    console.error(`--- page console ---\n${b.logs.join('\n')}`);
  }
  await b.close();
  if (Object.keys(figures).length) {
    console.log(`# figure: CPU (wasm) generation on the page's thread, pausing vs not: ${JSON.stringify(figures)}`);
  }
});

/** Generates with `lm` while counting animation frames; returns tokens, fps, tokens/s. */
async function measured(page) {
  await page.fill('#prompt', PROMPT);
  await page.fill('#regex', '.*');
  await page.fill('#max-tokens', String(TOKENS));
  await page.fill('#seed', '7');
  await page.setChecked('#chat', true);
  await page.check('#method-lm');
  // Frames are counted from Generate to the end of the run, in the page itself.
  await page.evaluate(() => {
    window.__frames = { n: 0, t0: performance.now(), on: true };
    const tick = () => {
      if (!window.__frames.on) return;
      window.__frames.n++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const runs = Number(await page.getAttribute('#run-status', 'data-run'));
  await page.click('#generate');
  await unlessCrash(page, page.waitForFunction(
    (n) => Number(document.querySelector('#run-status')?.dataset.run) > n
      && ['done', 'stopped', 'error'].includes(document.querySelector('#run-status')?.dataset.state),
    runs,
    { timeout: RUN_MS, polling: 500 },
  ));
  return page.evaluate(() => {
    const f = window.__frames;
    f.on = false;
    const secs = (performance.now() - f.t0) / 1000;
    return {
      state: document.querySelector('#run-status').dataset.state,
      message: document.querySelector('#run-status').textContent,
      tokens: [...document.querySelectorAll('#output .tok .tok-text')].map((t) => t.textContent),
      stats: document.querySelector('#stats').textContent,
      fps: Math.round((f.n / secs) * 10) / 10,
      secs: Math.round(secs * 10) / 10,
    };
  });
}

describe('the page stays responsive while the model runs on its thread', () => {
  it('pausing between blocks keeps frames coming and computes the same tokens', async () => {
    try {
      const { page } = b;
      const runs = {};
      for (const pause of ['on', 'off']) {
        await page.goto(`${BASE_URL}?backend=cpu${pause === 'off' ? '&pause=off' : ''}`);
        await waitForPhase(page, ['ready'], LOAD_MS);
        const r = await measured(page);
        assert.equal(r.state, 'done', r.message);
        const rate = Number((r.stats.match(/([0-9.]+) tokens\/s/) ?? [])[1]);
        figures[`pause ${pause}`] = { fps: r.fps, tokens_per_s: rate, seconds: r.secs };
        runs[pause] = r;
        console.log(`pause ${pause}: ${r.fps} frames/s, ${r.stats}, ${JSON.stringify(r.tokens.join(''))}`);
      }
      assert.deepEqual(runs.on.tokens, runs.off.tokens);
      assert.ok(runs.on.tokens.length >= 1 && runs.on.tokens.length <= TOKENS);
    } catch (e) {
      failed = true;
      throw e;
    }
  });
});
