// The real path through the page: download and cache the model, sample with `lcd` under a
// date regex and under (yes|no|maybe), compare with `lm`, sample exactly with `cars` (the
// form's default) and see its rejected attempts cleared, hear early when it may not finish
// and hand that run to the playground's auto, stop a run, reload from the cache,
// and refuse bad regexes with clear messages. Every regex check here is JavaScript's own
// RegExp, outside the code under test. One browser session: the model loads once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  ARTIFACTS, BASE_URL, finishQuickRun, fullMatch, sharedBrowser, startQuickRun, waitForPhase,
} from './lib.mjs';

// The CPU forward pass in wasm is slow: small token budgets, generous time limits.
const LOAD_MS = 300_000;
const RUN_MS = 240_000;
const DATE = '[0-9]{4}-[0-9]{2}-[0-9]{2}';
const DATE_PROMPT = 'On what date did Apollo 11 land on the Moon? Answer with the date only.';
const YNM = '(yes|no|maybe)';
const YNM_PROMPT = 'Is the sky blue on a clear day? Answer yes, no or maybe.';

const shared = sharedBrowser('generate', 'generate');
let loaded = false;

/** Runs `body(page)` as `shared.step` does; once the model failed to load, later steps
 *  fail at once instead of waiting out their timeouts. */
async function step(body, { needsModel = true } = {}) {
  if (needsModel && !loaded) throw new Error('the model did not load (see the first test)');
  return shared.step(body);
}

/** Starts a run with Ctrl+Enter (the shortcut, as a user would). */
const start = (page, run) => startQuickRun(page, { chat: true, ...run, keys: true });
const finish = (page) => finishQuickRun(page, RUN_MS);


describe('the page samples from SmolLM2', () => {
  let lcdDate;

  it('downloads the model with a progress bar and loads it', async () => {
    await step(async (page) => {
      await page.goto(BASE_URL);
      // The progress bar shows bytes of total while the model streams in.
      await page.waitForSelector('#model-progress', { timeout: 60_000 });
      await waitForPhase(page, ['ready'], LOAD_MS);
      const info = await page.locator('#model-info').textContent();
      assert.match(info, /98\.4 MB downloaded and cached/);
      assert.match(info, /30 blocks/);
      // What the file holds: architecture, size, tensor types.
      assert.match(info, /llama · 98\.4 MB · Q4_1 ×\d+, F32 ×\d+/);
      // Faithful by default: the form opens on exact rejection, not on masking.
      assert.equal(await page.isChecked('#method-cars'), true, 'cars is the default method');
      loaded = true;
    }, { needsModel: false });
  });

  it('lcd under a date regex gives a date, every token with its kept mass Z', async () => {
    await step(async (page) => {
      await start(page, { prompt: DATE_PROMPT, regex: DATE, method: 'lcd', maxTokens: 14 });
      const r = await finish(page);
      console.log(`lcd date: ${JSON.stringify(r.text)} · ${r.stats}`);
      assert.equal(r.state, 'done', r.message);
      assert.ok(fullMatch(DATE, r.text), `lcd output ${JSON.stringify(r.text)} is not a date`);
      assert.equal(r.valid, 'true');
      assert.equal(r.tokens.at(-1).eos, true, 'the run ends with EOS');
      // Every token drawn is shown and counted by the time the run is done (the worker
      // posts them together, the page paints them together).
      assert.equal(Number(r.stats.match(/^(\d+) tokens/)?.[1]), r.tokens.length, r.stats);
      for (const t of r.tokens) {
        assert.ok(t.z !== null && t.z > 0 && t.z <= 1 + 1e-9, `Z = ${t.z}`);
        assert.ok(t.p > 0 && t.p <= 1 + 1e-9, `p = ${t.p}`);
      }
      assert.match(r.stats, /tokens\/s/);
      await page.screenshot({ path: join(ARTIFACTS, 'lcd-date.png'), fullPage: true });
      lcdDate = r;
    });
  });

  it('lm on the same prompt is unconstrained: no Z, and its text differs from the date', async () => {
    await step(async (page) => {
      await start(page, { prompt: DATE_PROMPT, regex: DATE, method: 'lm', maxTokens: 8 });
      const r = await finish(page);
      console.log(`lm: ${JSON.stringify(r.text)} · ${r.stats}`);
      assert.equal(r.state, 'done', r.message);
      assert.ok(r.tokens.length > 0);
      assert.ok(r.tokens.every((t) => t.z === null), 'lm tokens carry no Z');
      assert.notEqual(r.text, lcdDate.text);
      // The page's verdict on the lm output agrees with JavaScript's regex.
      assert.equal(r.valid === 'true', fullMatch(DATE, r.text) && r.tokens.at(-1).eos);
      // Under lcd the mask removed mass the model wanted to put elsewhere: Z < 1 somewhere.
      assert.ok(
        lcdDate.tokens.some((t) => t.z < 0.999),
        `lcd kept all the mass at every step: ${lcdDate.tokens.map((t) => t.z)}`,
      );
    });
  });

  it('lcd under (yes|no|maybe) answers with one of the three words', async () => {
    await step(async (page) => {
      await start(page, { prompt: YNM_PROMPT, regex: YNM, method: 'lcd', maxTokens: 6, seed: 7 });
      const r = await finish(page);
      console.log(`lcd yes/no/maybe: ${JSON.stringify(r.text)} · ${r.stats}`);
      assert.equal(r.state, 'done', r.message);
      assert.ok(fullMatch(YNM, r.text), `output ${JSON.stringify(r.text)}`);
      assert.equal(r.valid, 'true');
      await page.screenshot({ path: join(ARTIFACTS, 'finished-run.png'), fullPage: true });
    });
  });

  it('cars (exact) rejects the attempts that leave the regex, clears them and counts them', async () => {
    await step(async (page) => {
      // Asked for a date, the model starts with anything but yes, no or maybe: the first
      // attempts leave the language and are rejected.
      await start(page, { prompt: DATE_PROMPT, regex: YNM, method: 'cars', maxTokens: 6, seed: 3 });
      const r = await finish(page);
      const rejected = Number(await page.getAttribute('#stats', 'data-rejected'));
      console.log(`cars yes/no/maybe: ${JSON.stringify(r.text)} · ${r.stats}`);
      assert.equal(r.state, 'done', r.message);
      assert.match(r.message, /\(cars\)/);
      assert.ok(fullMatch(YNM, r.text), `output ${JSON.stringify(r.text)}`);
      assert.equal(r.valid, 'true');
      assert.ok(rejected >= 1, `no attempt rejected (${r.stats})`);
      assert.match(r.stats, rejected === 1 ? /· 1 attempt rejected/ : new RegExp(`· ${rejected} attempts rejected`));
      // What stays on screen is the accepted attempt alone, ending with EOS; each token's Z
      // is the mass CARS had not yet ruled out there (below 1 at the first step, where the
      // rejected attempts' first tokens were pruned).
      assert.equal(r.tokens.filter((t) => !t.eos).map((t) => t.text).join(''), r.text);
      assert.equal(r.tokens.at(-1).eos, true);
      assert.ok(r.tokens.every((t) => t.z !== null && t.z > 0 && t.z <= 1 + 1e-9), 'Z in (0, 1]');
      assert.ok(r.tokens[0].z < 1, `the first step kept all the mass: ${r.tokens[0].z}`);
    });
  });

  it('cars says early when it may not finish, and its link runs the same in the playground with auto', async () => {
    await step(async (page) => {
      // Asked for a date, the model all but never starts with "zq": every attempt leaves
      // the regex, and after 32 in a row CARS says what that bounds.
      const REGEX = 'zq[0-9]{2}';
      await start(page, { prompt: DATE_PROMPT, regex: REGEX, method: 'cars', maxTokens: 8, seed: 1 });
      await page.waitForSelector('#advice', { timeout: RUN_MS });
      const said = await page.textContent('#advice');
      console.log(`cars advice: ${said}`);
      assert.match(said, /^32 attempts in a row left the regex: outputs that match it hold at most about \S+ of the model's probability, so exact rejection may need \S+ or more attempts for one\. Let it run, or run it in the playground with auto, which switches to weighted SMC/, said);
      // The bound: at most what 32 failures allow (3/32, the usual 95% bound).
      const mass = Number(await page.getAttribute('#advice', 'data-mass'));
      assert.ok(mass > 0 && mass <= 3 / 32 + 1e-12, `bound ${mass}`);
      const stats = await page.textContent('#stats');
      assert.match(stats, /^\d+ tokens in \d+ attempts/, stats);
      // Saying so does not stop the run.
      assert.equal(await page.getAttribute('#run-status', 'data-state'), 'running');
      assert.match(await page.getAttribute('#advice-auto', 'href'), /^#v=1&s=/);
      await page.locator('.output-section').screenshot({ path: join(ARTIFACTS, 'quick-form-advice.png') });
      const runsBefore = await page.$eval('#pg-status', (s) => Number(s.dataset.run ?? 0));
      await page.click('#advice-auto');
      const r = await finish(page);
      assert.equal(r.state, 'stopped', r.message);
      // The playground has the same prompt and regex under auto, runs it, and auto hands
      // what rejection cannot finish to weighted SMC.
      await page.waitForFunction((n) => Number(document.querySelector('#pg-status').dataset.run ?? 0) > n,
        runsBefore, { timeout: RUN_MS });
      assert.equal(await page.inputValue('#pg-method'), 'auto');
      assert.equal(await page.inputValue('#pg-grammar'), REGEX);
      await page.waitForFunction(
        () => ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: RUN_MS });
      const est = await page.textContent('#pg-estimate');
      console.log(`playground auto: ${est}`);
      assert.equal(await page.getAttribute('#pg-status', 'data-state'), 'done', est);
      // Its last word is the weighted run's estimate of the valid mass, far below what
      // rejection could reach (the hand-over's own line came before it).
      const m = est.match(/^auto: the first weighted run puts valid outputs at about (\S+) of the model's mass: plain rejection would need about (\S+) generations a sample/);
      assert.ok(m, est);
      assert.ok(Number(m[1]) > 0 && Number(m[1]) <= mass, `SMC's estimate ${m[1]} above the bound ${mass}`);
      await page.screenshot({ path: join(ARTIFACTS, 'quick-form-advice-to-auto.png'), fullPage: false });
    });
  });

  it('Esc stops a run at once', async () => {
    await step(async (page) => {
      await start(page, { prompt: 'Write a long story about a cat.', regex: '.*', method: 'lm', maxTokens: 400 });
      await page.waitForFunction(() => document.querySelectorAll('#output .tok').length >= 2, null, {
        timeout: RUN_MS,
      });
      const t0 = Date.now();
      await page.keyboard.press('Escape');
      const r = await finish(page);
      const waited = Date.now() - t0;
      assert.equal(r.state, 'stopped', r.message);
      assert.ok(r.tokens.length < 400);
      // At most the token being computed finishes (well under the CPU's per-token time).
      assert.ok(waited < 15_000, `stopping took ${waited} ms`);
      assert.equal(await page.locator('#generate').isDisabled(), false);
    });
  });

  it('bad regexes get clear messages before any token', async () => {
    await step(async (page) => {
      await start(page, { prompt: 'x', regex: '[0-9', method: 'lcd', maxTokens: 4 });
      let r = await finish(page);
      assert.equal(r.state, 'error');
      assert.match(r.message, /invalid regex/);
      assert.match(r.message, /unclosed character class/);
      assert.match(r.message, /line 1, column 1/);
      assert.equal(r.tokens.length, 0);

      await start(page, { prompt: 'x', regex: '[a&&b]', method: 'lcd', maxTokens: 4 });
      r = await finish(page);
      assert.equal(r.state, 'error');
      assert.match(r.message, /the constraint matches no string/);
    });
  });

  it('a half-written cache entry is detected and the model downloaded again', async () => {
    await step(async (page) => {
      // Replace the cached model with its first 1000 bytes under the same key (URL and size).
      const key = await page.evaluate(async () => {
        const cache = await caches.open('strait-models-v1');
        const k = (await cache.keys()).find((r) => r.url.includes('strait-bytes='));
        if (!k) return null;
        await cache.put(k, new Response(new Uint8Array(1000)));
        return k.url;
      });
      assert.ok(key, 'no cached model entry');
      await page.reload();
      await waitForPhase(page, ['ready'], LOAD_MS);
      const notes = await page.locator('.note').allTextContents();
      assert.ok(
        notes.some((n) => /cached copy of the model was incomplete \(1000 of 98362432 bytes\)/.test(n)),
        `notes: ${JSON.stringify(notes)}`,
      );
      assert.match(await page.locator('#model-info').textContent(), /downloaded and cached/);
    });
  });

  it('a reload reads the model from Cache Storage', async () => {
    await step(async (page) => {
      await page.reload();
      await waitForPhase(page, ['ready'], LOAD_MS);
      assert.match(await page.locator('#model-info').textContent(), /read from this browser's cache/);
    });
  });
});
