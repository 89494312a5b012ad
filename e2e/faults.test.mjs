// Faults on the way to the model, each ending with a clear message and nothing lost:
// - the model's download cut halfway (the server sends half the file): the page says how
//   far it got, keeps nothing of the half copy, and a reload downloads it whole;
// - Cache Storage refusing to store the model (a full quota): the page says so once, in
//   sight (not folded away), and runs without the cache;
// - the page open in two tabs at once (one cache, two pools of workers): both load the
//   model and run the same lesson link to the same samples.
// Each test starts from a fresh profile (an empty cache).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ARTIFACTS, BASE_URL, waitForPhase, withPage } from './lib.mjs';

const MODEL_FILE = join(dirname(ARTIFACTS), '..', 'assets', 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
const LOAD_MS = 300_000;

/** The notes the page shows in sight (not inside a folded disclosure). */
async function visibleNotes(page) {
  return page.evaluate(() => [...document.querySelectorAll('.note')]
    .filter((n) => n.offsetParent !== null).map((n) => n.textContent));
}

test('a download cut halfway is reported, not kept, and a reload completes it', async () => {
  await withPage('fault-cut-download', { webgpu: false, openDetails: false }, async (page) => {
    const whole = readFileSync(MODEL_FILE);
    const half = whole.subarray(0, Math.floor(whole.length / 2));
    // The size comes from a HEAD request (answered as usual); the GET sends half the bytes.
    await page.route('**/models/*.gguf', (route) => (route.request().method() === 'GET'
      ? route.fulfill({ status: 200, body: half, headers: { 'content-type': 'application/octet-stream' } })
      : route.continue()));
    await page.goto(BASE_URL);
    await waitForPhase(page, ['failed'], LOAD_MS);
    const msg = await page.locator('#model-error').textContent();
    assert.match(msg, new RegExp(`stopped after ${half.length} of ${whole.length} bytes; reload to try again`));
    const cached = await page.evaluate(async () => (await (await caches.open('strait-models-v1')).keys()).length);
    assert.equal(cached, 0, 'the half copy is not in the cache');

    await page.unroute('**/models/*.gguf');
    await page.reload();
    await waitForPhase(page, ['ready'], LOAD_MS);
    await page.locator('#engine summary').click();
    assert.match(await page.locator('#model-info').textContent(), /downloaded and cached/);
  });
});

test('a cache that refuses to store the model is reported once, and the page runs without it', async () => {
  await withPage('fault-quota', { webgpu: false, openDetails: false }, async (page) => {
    await page.addInitScript(() => {
      // (about:blank has no Cache Storage.)
      if (typeof Cache === 'undefined') return;
      Cache.prototype.put = function put() {
        return Promise.reject(new DOMException('The quota has been exceeded.', 'QuotaExceededError'));
      };
    });
    await page.goto(BASE_URL);
    await waitForPhase(page, ['ready'], LOAD_MS);
    const notes = (await visibleNotes(page)).filter((n) => n.includes('could not be stored in the browser cache'));
    assert.equal(notes.length, 1, `one note in sight: ${JSON.stringify(notes)}`);
    assert.match(notes[0], /QuotaExceededError|quota/i);
    assert.match(notes[0], /downloaded again next time/);
    // And the model runs: a real-model lesson step to its end.
    await page.goto('about:blank');
    await page.goto(`${BASE_URL}#lesson=smollm2&step=1`);
    await waitForPhase(page, ['ready'], LOAD_MS);
    await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('#pg-status')?.dataset.state),
      null, { timeout: LOAD_MS });
    const s = await page.evaluate(() => ({ ...document.querySelector('#pg-status').dataset, text: document.querySelector('#pg-status').textContent }));
    assert.equal(s.state, 'done', s.text);
  });
});

test('two tabs at once both load the model and run the same link to the same samples', async () => {
  await withPage('fault-two-tabs', { webgpu: false, openDetails: false }, async (page, b) => {
    const other = await b.context.newPage();
    try {
      const link = `${BASE_URL}#lesson=smollm2&step=1`;
      await Promise.all([page.goto(link), other.goto(link)]);
      const outputs = await Promise.all([page, other].map(async (p) => {
        await waitForPhase(p, ['ready'], LOAD_MS);
        await p.waitForFunction(() => ['done', 'error'].includes(document.querySelector('#pg-status')?.dataset.state),
          null, { timeout: LOAD_MS });
        const s = await p.evaluate(() => ({ ...document.querySelector('#pg-status').dataset, text: document.querySelector('#pg-status').textContent }));
        assert.equal(s.state, 'done', s.text);
        return p.$$eval('#view-results .output-row', (rows) => rows.map((r) => [r.dataset.text, r.dataset.count]));
      }));
      assert.ok(outputs[0].length > 0, 'samples were drawn');
      assert.deepEqual(outputs[1], outputs[0], 'the same link gives the same samples in both tabs');
    } finally {
      await other.close();
    }
  });
});
