// The quick form's generation runs in the sampling worker (a Web Worker with its own copy
// of the model) when the model is on the CPU; with `?worker=off` it runs on the page's
// thread, where each block of a CPU forward pass pauses (a MessageChannel task) every 8 ms
// so the page keeps painting, and `?pause=off` turns that off. This runs the same seeded
// generation the three ways, counts animation frames while it runs, and prints frames per
// second, tokens per second and the worker's per-token message cost side by side.
// Asserted: the three give the same tokens (where the work happens never changes what is
// computed).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  BASE_URL, finishQuickRun, sharedBrowser, startFrameCount, startQuickRun, stopFrameCount, waitForPhase,
} from './lib.mjs';

const LOAD_MS = 180_000;
const RUN_MS = 180_000;
const PROMPT = 'Write one sentence about the sea.';
const TOKENS = 8;

const shared = sharedBrowser('smoothness', "CPU (wasm) generation in the worker vs on the page's thread, pausing or not");
const { figures } = shared;

/** Generates with `lm` while counting animation frames (from just before the form is
 *  filled to the run's end, in the page itself); returns tokens, fps, tokens/s. */
async function measured(page) {
  await startFrameCount(page);
  await startQuickRun(page, { prompt: PROMPT, regex: '.*', method: 'lm', maxTokens: TOKENS, seed: 7, chat: true });
  const r = await finishQuickRun(page, RUN_MS);
  return { ...(await stopFrameCount(page)), ...r, tokens: r.tokens.map((t) => t.text) };
}

describe('the page stays responsive while the model runs', () => {
  it('in the sampling worker, or on the page\'s thread with pauses: frames keep coming, the same tokens', async () => {
    await shared.step(async (page) => {
      const runs = {};
      const modes = [
        ['worker', '', 'ready'],
        ['pause on', '&worker=off', 'off'],
        ['pause off', '&worker=off&pause=off', 'off'],
      ];
      for (const [mode, query, worker] of modes) {
        await page.goto(`${BASE_URL}?backend=cpu${query}`);
        await waitForPhase(page, ['ready'], LOAD_MS);
        await page.waitForFunction((w) => document.querySelector('#pg-worker')?.dataset.state === w,
          worker, { timeout: LOAD_MS });
        const r = await measured(page);
        assert.equal(r.state, 'done', r.message);
        const rate = Number((r.stats.match(/([0-9.]+) tokens\/s/) ?? [])[1]);
        figures[mode] = { fps: r.fps, tokens_per_s: rate, seconds: r.secs };
        if (mode === 'worker') {
          // The line is refreshed four times a second.
          await page.waitForFunction((n) => Number(document.querySelector('#pg-worker').dataset.tokens) >= n,
            r.tokens.length, { timeout: 5_000 });
          const w = await page.evaluate(() => ({ ...document.querySelector('#pg-worker').dataset }));
          assert.ok(Number(w.tokens) >= r.tokens.length, `the tokens came from the worker: ${JSON.stringify(w)}`);
          figures[mode].mean_post_to_handler_ms = Number(w.meanLatencyMs);
          figures[mode].mean_page_ms_per_token = Number(w.meanApplyMs);
        }
        runs[mode] = r;
        console.log(`${mode}: ${r.fps} frames/s, ${r.stats}, ${JSON.stringify(r.tokens.join(''))}`);
      }
      assert.deepEqual(runs['pause on'].tokens, runs['pause off'].tokens);
      assert.deepEqual(runs.worker.tokens, runs['pause on'].tokens);
      assert.ok(runs.worker.tokens.length >= 1 && runs.worker.tokens.length <= TOKENS);
    });
  });
});
