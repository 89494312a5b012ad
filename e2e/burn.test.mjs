// The page built with the burn engine (`cargo xtask build --burn`, served from dist-burn/):
// `?engine=burn` loads SmolLM2 onto burn's WebGPU backend (Chromium's SwiftShader here),
// samples with `lcd` under (yes|no|maybe) and checks the output with JavaScript's RegExp;
// then the same run on our own engine in the same page (`?backend=cpu`: same seed, same
// words; `?backend=webgpu`: the same adapter), the three rates side by side. And P-GCD in
// the playground, whose HMM work the worker runs on burn's WebGPU backend in this page.
// `STRAIT_BURN_URL` is where that page is served (default: `cargo xtask serve --burn`'s).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { finishQuickRun, fullMatch, sharedBrowser, startQuickRun, unlessCrash, waitForPhase } from './lib.mjs';

const BURN_URL = process.env.STRAIT_BURN_URL ?? 'http://127.0.0.1:8080/';
// SwiftShader runs WebGPU on the CPU: small token budgets, long waits (a cold 2-core run
// took 187 s to the first burn token with the chat template's 45-token prompt, kernel
// compilation included).
const LOAD_MS = 480_000;
const RUN_MS = 480_000;
const YNM = '(yes|no|maybe)';
const YNM_PROMPT = 'Is the sky blue on a clear day? Answer yes, no or maybe.';
// The engine comparison's prompt: short and without the chat template (whose system
// prompt is most of the tokens), since burn's prefill on SwiftShader is the slow part.
const SHORT_PROMPT = 'Is the sky blue? yes, no or maybe:';

const shared = sharedBrowser('burn', 'burn');

/** Loads `query` on the burn page and runs lcd under (yes|no|maybe); returns what the page shows. */
async function lcdOn(page, query) {
  await page.goto(new URL(query, BURN_URL).href);
  await waitForPhase(page, ['ready'], LOAD_MS);
  const info = await page.locator('#backend-info').textContent();
  await startQuickRun(page, { prompt: SHORT_PROMPT, regex: YNM, method: 'lcd', maxTokens: 4, seed: 3, chat: false });
  return { info, ...(await finishQuickRun(page, RUN_MS)) };
}

describe('P-GCD\'s HMM on burn\'s WebGPU backend in the burn page', () => {
  it('the sampling worker distils the HMM and builds the guide on WebGPU', async () => {
    await shared.step(async (page) => {
      // The model on our CPU pass in the worker; its HMM work on burn's WebGPU backend.
      await page.goto('about:blank');
      await page.goto(new URL('?backend=cpu', BURN_URL).href);
      await waitForPhase(page, ['ready'], LOAD_MS);
      await page.waitForFunction(() => document.querySelector('#pg-worker')?.dataset.state === 'ready',
        null, { timeout: LOAD_MS });
      await page.selectOption('#pg-model', 'real');
      await page.fill('#pg-grammar', YNM);
      await page.selectOption('#pg-kind', 'regex');
      await page.fill('#pg-prompt', YNM_PROMPT);
      await page.selectOption('#pg-method', 'p-gcd-smc');
      await page.fill('#pg-n', '1');
      await page.fill('#pg-particles', '2');
      await page.fill('#pg-max-tokens', '4');
      await page.fill('#pg-seed', '1');
      await page.setChecked('#pg-compare-mode', false);
      await page.fill('#pg-speed', '10');
      const before = Number(await page.getAttribute('#pg-status', 'data-run'));
      await page.click('#pg-run');
      await unlessCrash(page, page.waitForFunction((n) => {
        const s = document.querySelector('#pg-status');
        return Number(s.dataset.run) > n && ['done', 'stopped', 'error'].includes(s.dataset.state);
      }, before, { timeout: RUN_MS, polling: 250 }));
      const state = await page.getAttribute('#pg-status', 'data-state');
      const text = await page.textContent('#pg-status');
      console.log(`p-gcd-smc: ${text}`);
      assert.equal(state, 'done', text);
      assert.equal(await page.getAttribute('#view-hmm', 'data-engine'), 'burn-webgpu-f32');
      assert.equal(await page.getAttribute('#view-hmm-progress', 'value'),
        await page.getAttribute('#view-hmm-progress', 'max'));
      const texts = await page.$$eval('#view-results .output-row',
        (rows) => rows.filter((r) => Number(r.dataset.count) > 0).map((r) => r.dataset.text));
      assert.ok(texts.length > 0, 'drew something');
      for (const t of texts) assert.match(t, /^(yes|no|maybe)$/);
    });
  });
});

describe('the burn engine in the page', () => {
  it('?engine=burn samples (yes|no|maybe) on burn WebGPU as our engine does', async () => {
    await shared.step(async (page) => {
      const burn = await lcdOn(page, '?engine=burn');
      console.log(`burn: ${JSON.stringify(burn)}`);
      assert.match(burn.info, /burn on WebGPU/);
      assert.equal(burn.state, 'done', burn.message);
      assert.ok(fullMatch(YNM, burn.text), burn.text);
      const ours = await lcdOn(page, '?backend=cpu');
      console.log(`ours (CPU, wasm): ${JSON.stringify(ours)}`);
      assert.equal(ours.state, 'done', ours.message);
      assert.equal(burn.text, ours.text, 'same seed, same words');
      // Our WGSL engine on the same adapter, for the rates side by side.
      const wgsl = await lcdOn(page, '?backend=webgpu');
      console.log(`ours (WebGPU): ${JSON.stringify(wgsl)}`);
      assert.equal(wgsl.state, 'done', wgsl.message);
      assert.ok(fullMatch(YNM, wgsl.text), wgsl.text);
    });
  });
});
