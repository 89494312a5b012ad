// The playground's real-model runs sample in a Web Worker that holds its own copy of the
// model, so the page's thread only animates. This runs the same seeded SmolLM2 run in the
// worker and, with `?worker=off`, on the page's thread (which pauses every 8 ms inside
// forward passes), counts animation frames during each, and prints frames per second, the
// run's time and the worker's message overhead side by side. Asserted: the same samples
// both ways; Stop mid-run reaches the worker (its messages stop) and the next run works;
// a worker that crashes mid-run ends the run with a message and is replaced;
// a worker that cannot start leaves the page sampling on its own thread. With a pool of two
// workers (`?workers=2`), compare mode's samplers run side by side — both workers busy at
// once — and draw what one worker draws; the run's time with one worker and with two is
// printed side by side. An SMC run's particles and a rejection sampler's batch of
// generations (`batch B`) go to the idle worker too, with the same samples: split by
// sequence where products cannot be shared (`?split=off`), by rows of each product where
// they can. A run leaves
// its KV caches to the next, so the same run again skips the prompt's prefill and draws
// the same samples (the time to the first token of both is printed). One sequence's
// matrix products are shared with the idle worker where the page is cross-origin isolated
// (`?split=off` says not to), with the same samples. Where it is, a pool of two can split
// the model by rows instead of giving each worker a whole copy (the page's default wherever
// it can, `?pool=copies` for whole copies): the lead holds the whole model and runs every
// job, the other worker its half of every matrix's rows (about one copy and a half between
// them), the same samples come out, and when the half's holder crashes mid-run the lead
// computes its rows, the run ends with the same samples, and the holder is replaced.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  ARTIFACTS, BASE_URL, prefillDone, sharedBrowser, startFrameCount, stopFrameCount, unlessCrash, waitForPhase,
} from './lib.mjs';

const LOAD_MS = 300_000;
const RUN_MS = 300_000;
const PROMPT = 'Write one sentence about the sea.';
// lcd under a regex of 12 to 40 letters, at most 12 tokens.
const GRAMMAR = '[a-z ]{12,40}';
const TOKENS = 12;

const shared = sharedBrowser('worker', "SmolLM2 playground run (CPU wasm), Web Worker vs page's thread");
const { figures } = shared;

/** Opens the page with `query`, waits for the model and for the worker to settle. */
async function open(page, query, workerState) {
  await page.goto('about:blank');
  await page.goto(`${BASE_URL}${query}`);
  await waitForPhase(page, ['ready'], LOAD_MS);
  await unlessCrash(page, page.waitForFunction(
    (want) => document.querySelector('#pg-worker')?.dataset.state === want,
    workerState, { timeout: LOAD_MS, polling: 250 }));
}

/** The wasm memory the page's thread and each worker hold, in MB. */
async function wasmMB(page) {
  const MB = 1024 * 1024;
  const pageBytes = await page.evaluate(() => window.__straitWasmBytes?.() ?? 0);
  const workers = await Promise.all(page.workers().map((w) => w.evaluate(() => self.__straitWasmBytes?.() ?? 0).catch(() => 0)));
  return { page: pageBytes / MB, workers: workers.filter((b) => b > 0).map((b) => b / MB) };
}

/** Opens the page with a pool of `workers` sampling workers and waits until all are ready
 * (the later ones load after the first). */
async function openPool(page, workers, extra = '') {
  await open(page, `?backend=cpu&workers=${workers}${extra}`, 'ready');
  await unlessCrash(page, page.waitForFunction(
    (n) => Number(document.querySelector('#pg-worker').dataset.workers) === n,
    workers, { timeout: LOAD_MS, polling: 250 }));
}

async function setForm(page, { grammar = GRAMMAR, maxTokens = TOKENS, n = 1, seed = '7' } = {}) {
  await page.selectOption('#pg-model', 'real');
  await page.fill('#pg-grammar', grammar);
  await page.selectOption('#pg-kind', 'regex');
  await page.fill('#pg-prompt', PROMPT);
  await page.setChecked('#pg-chat', true);
  await page.selectOption('#pg-method', 'lcd');
  await page.setChecked('#pg-compare-mode', false);
  await page.fill('#pg-n', String(n));
  await page.fill('#pg-max-tokens', String(maxTokens));
  await page.fill('#pg-seed', seed);
  await page.fill('#pg-speed', '10');
}

function worker(page) {
  return page.evaluate(() => {
    const w = document.querySelector('#pg-worker');
    return { state: w.dataset.state, messages: Number(w.dataset.messages), tokens: Number(w.dataset.tokens),
      latencyMs: Number(w.dataset.meanLatencyMs), applyMs: Number(w.dataset.meanApplyMs), text: w.textContent };
  });
}

/** Waits until the worker line has read the pool `n` more times (`data-refreshes`). */
async function refreshed(page, n) {
  const now = Number(await page.getAttribute('#pg-worker', 'data-refreshes'));
  await page.waitForFunction((want) => Number(document.querySelector('#pg-worker').dataset.refreshes) >= want,
    now + n, { timeout: 30_000, polling: 50 });
}

/** Starts a run of five samples of up to 60 tokens and waits until it has drawn some. */
async function startLongRun(page) {
  await setForm(page, { grammar: '[a-z ]{1,60}', maxTokens: 60, n: 5 });
  const before = Number(await page.getAttribute('#pg-status', 'data-run'));
  await page.click('#pg-run');
  await unlessCrash(page, page.waitForFunction(
    (n) => Number(document.querySelector('#pg-status').dataset.run) > n
      && Number(document.querySelector('#pg-status').dataset.items) > 3,
    before, { timeout: RUN_MS, polling: 100 }));
}

/** Runs the form's setup while counting animation frames in the page. */
async function measured(page) {
  await startFrameCount(page);
  const runs = Number(await page.getAttribute('#pg-status', 'data-run'));
  await page.click('#pg-run');
  await unlessCrash(page, page.waitForFunction(
    (n) => Number(document.querySelector('#pg-status').dataset.run) > n
      && ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
    runs, { timeout: RUN_MS, polling: 250 }));
  const frames = await stopFrameCount(page);
  return { ...frames, ...await runResult(page) };
}

/** The playground's last run: its state, status line, first token and outputs. */
async function runResult(page) {
  return page.evaluate(() => {
    const s = document.querySelector('#pg-status');
    return {
      state: s.dataset.state,
      message: s.textContent,
      firstTokenMs: Number(s.dataset.firstTokenMs),
      outputs: [...document.querySelectorAll('#view-results .output-row')]
        .filter((r) => Number(r.dataset.count) > 0).map((r) => `${r.dataset.text}×${r.dataset.count}`),
    };
  });
}

/** Runs a seeded date-regex run set up by `choose` with one worker, then with two whose
 * matrix products cannot be shared (`?split=off`): the idle worker computes some of the
 * run's sequences (a batched model call split between them); then with two sharing
 * products, each with a whole copy (`?pool=copies`) and each with a share of the rows
 * (the default here): the batch stays with one worker and the other computes rows of its
 * products. The same samples all four ways. Prints the four times under `name`. */
async function sharedWithIdleWorker(name, { n }, choose) {
  await shared.step(async (page) => {
    const results = {};
    for (const [label, workers, extra] of [['1 worker', 1, ''], ['2 workers, by sequence', 2, '&split=off'],
      ['2 workers, by rows', 2, '&pool=copies'], ['2 shares of the model, by rows', 2, '']]) {
      await openPool(page, workers, extra);
      await setForm(page, { grammar: '[0-9]{4}-[0-9]{2}-[0-9]{2}', maxTokens: 16, n, seed: '1' });
      await page.fill('#pg-prompt', 'Reply with today\'s date in the format YYYY-MM-DD and nothing else.');
      await choose(page);
      await prefillDone(page);
      const before = Number(await page.getAttribute('#pg-worker', 'data-helped'));
      const chunksBefore = Number(await page.getAttribute('#pg-worker', 'data-split'));
      const batchOffersBefore = Number(await page.getAttribute('#pg-worker', 'data-split-batch-offers'));
      const r = await measured(page);
      assert.equal(r.state, 'done', r.message);
      // The line reads the pool four times a second: two more reads show the run's end.
      await refreshed(page, 2);
      const helped = Number(await page.getAttribute('#pg-worker', 'data-helped')) - before;
      const split = await page.getAttribute('#pg-worker', 'data-split');
      const chunks = Number(split) - chunksBefore;
      const batchOffers = Number(await page.getAttribute('#pg-worker', 'data-split-batch-offers')) - batchOffersBefore;
      if (workers === 1) assert.equal(helped, 0);
      else if (extra === '&split=off') {
        assert.equal(split, 'off');
        assert.ok(helped > 0, 'the idle worker computed some of the sequences');
      } else {
        assert.equal(helped, 0, 'the batch stayed with one worker');
        assert.ok(chunks > 0, `the idle worker computed rows of its products: ${chunksBefore} → ${split}`);
        // Not only the prompt's prefill: products of the batch itself were shared.
        assert.ok(batchOffers > 0, `products of the kept batch were shared: ${batchOffers}`);
      }
      assert.ok(r.outputs.length > 0, r.message);
      results[label] = r.outputs;
      figures[`${name}, ${label}`] = {
        seconds: r.secs, fps: r.fps, sequences_computed_by_the_other_worker: helped,
        row_chunks_computed_by_the_other_worker: extra === '&split=off' || workers === 1 ? 0 : chunks,
      };
      console.log(`${name}, ${label}: ${r.secs} s, helped ${helped}, chunks ${chunksBefore} → ${split}, ${JSON.stringify(r.outputs)}`);
    }
    assert.deepEqual(results['2 workers, by sequence'], results['1 worker']);
    assert.deepEqual(results['2 workers, by rows'], results['1 worker']);
    assert.deepEqual(results['2 shares of the model, by rows'], results['1 worker']);
  });
}

describe('the playground samples the real model in a Web Worker', () => {
  it('keeps the page at frame rate and draws what the page\'s thread draws, the prompt prefilled as it was set', async () => {
    await shared.step(async (page) => {
      const runs = {};
      for (const mode of ['worker', 'page thread']) {
        const inWorker = mode === 'worker';
        if (inWorker) await openPool(page, 2);
        else await open(page, '?backend=cpu&worker=off', 'off');
        await setForm(page);
        if (inWorker) {
          // The prompt set in the form while nothing runs is prefilled by the idle workers
          // before Run (the page's thread, below, starts cold: the same samples).
          await unlessCrash(page, page.waitForFunction(() => {
            const w = document.querySelector('#pg-worker');
            return Number(w.dataset.warmed) > 0 && w.dataset.busy === '0';
          }, null, { timeout: 60_000, polling: 100 }).catch(() => assert.fail('the form\'s prompt was not prefilled before Run')));
        }
        const before = await worker(page);
        const r = await measured(page);
        assert.equal(r.state, 'done', r.message);
        if (inWorker) {
          // The line is refreshed four times a second.
          await page.waitForFunction((n) => Number(document.querySelector('#pg-worker').dataset.tokens) > n,
            before.tokens, { timeout: 5_000 });
        }
        const w = await worker(page);
        if (inWorker) {
          assert.ok(w.messages > before.messages, `the worker sent batches: ${w.text}`);
        } else {
          assert.equal(w.messages, 0, w.text);
        }
        figures[mode] = {
          fps: r.fps, seconds: r.secs, first_token_ms: r.firstTokenMs,
          ...(inWorker ? { messages: w.messages - before.messages, mean_post_to_handler_ms: w.latencyMs, mean_page_ms_per_message: w.applyMs } : {}),
        };
        runs[mode] = r;
        console.log(`${mode}: ${r.fps} frames/s, ${r.secs} s, ${JSON.stringify(r.outputs)}; ${w.text}`);
        await page.screenshot({ path: join(ARTIFACTS, `worker-${inWorker ? 'on' : 'off'}.png`), fullPage: true });
      }
      assert.equal(runs.worker.outputs.length, 1);
      assert.deepEqual(runs.worker.outputs, runs['page thread'].outputs);
    });
  });

  it('Stop reaches the worker, and the next run works; a worker that crashes mid-run is replaced', async () => {
    await shared.step(async (page) => {
      await open(page, '?backend=cpu', 'ready');
      await setForm(page, { grammar: '[a-z ]{1,60}', maxTokens: 60, n: 5 });
      const runs = Number(await page.getAttribute('#pg-status', 'data-run'));
      await page.click('#pg-run');
      await unlessCrash(page, page.waitForFunction(
        (n) => Number(document.querySelector('#pg-status').dataset.run) > n
          && Number(document.querySelector('#pg-status').dataset.items) > 3,
        runs, { timeout: RUN_MS, polling: 100 }));
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state === 'stopped',
        null, { timeout: 10_000 });
      // The worker stops at its next model call: after that its messages stop. Counted in
      // reads of the pool by the page (four a second), not in time, so a slow machine
      // waits as many reads as a fast one.
      await page.waitForFunction(() => document.querySelector('#pg-worker').dataset.busy === '0',
        null, { timeout: 10_000, polling: 50 });
      await refreshed(page, 8);
      const settled = (await worker(page)).messages;
      await refreshed(page, 12);
      assert.equal((await worker(page)).messages, settled, 'the worker kept sending after Stop');
      await page.screenshot({ path: join(ARTIFACTS, 'worker-stopped.png'), fullPage: true });
      // The largest seed (above 2^53: it travels to the worker as a BigInt).
      await setForm(page, { grammar: '(yes|no|maybe)', maxTokens: 4, n: 1, seed: '18446744073709551615' });
      const r = await measured(page);
      assert.equal(r.state, 'done', r.message);
      assert.equal(r.outputs.length, 1);
      assert.match(r.outputs[0], /^(yes|no|maybe)×1$/);
      // The worker line is polled four times a second: its count catches up within 250 ms.
      await page.waitForFunction(
        (n) => Number(document.querySelector('#pg-worker').dataset.messages) > n,
        settled, { timeout: 5_000, polling: 50 });

      // The worker crashes mid-run (a panic aborts its module, as a bug or running out of
      // memory would): the run ends with a message saying so, a new worker takes its
      // place, and the next run works on it.
      await startLongRun(page);
      const errorsBefore = page.straitErrors.length;
      const workers = await page.getAttribute('#pg-worker', 'data-workers');
      assert.ok(await page.evaluate(() => window.__straitCrashWorker()), 'a busy worker to crash');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state === 'error',
        null, { timeout: 30_000, polling: 100 });
      assert.match(await page.textContent('#pg-status'),
        /a sampling worker stopped \(.+\); what it was running ended with it, and a new worker takes its place/);
      await page.waitForFunction((n) => document.querySelector('#pg-worker').dataset.replaced === '1'
        && document.querySelector('#pg-worker').dataset.workers === n, workers, { timeout: 60_000, polling: 250 })
        .catch(async () => assert.fail(`no new worker: ${(await worker(page)).text}`));
      assert.match((await worker(page)).text, /1 worker stopped and was replaced/);
      // The worker's trap stays the worker's: the page itself threw nothing.
      assert.deepEqual(page.straitErrors.slice(errorsBefore), []);
      await setForm(page, { grammar: '(yes|no|maybe)', maxTokens: 4, n: 1 });
      const after = await measured(page);
      assert.equal(after.state, 'done', after.message);
      assert.match(after.outputs[0], /^(yes|no|maybe)×1$/);
      await page.screenshot({ path: join(ARTIFACTS, 'worker-replaced.png'), fullPage: true });
    });
  });

  it('compare mode\'s samplers run side by side in a pool of workers, with the same samples', async () => {
    await shared.step(async (page) => {
      const results = {};
      for (const [workers, pool] of [[1, 'copies'], [2, 'copies'], [2, 'shares']]) {
        await openPool(page, workers, pool === 'shares' ? '' : `&pool=${pool}`); // shares: the default
        assert.equal(await page.locator('#pg-worker .pool-worker').count(), workers);
        // The workers each hold the model (98.4 MB); the page's thread only its header and
        // tokenizer, read from the file's first megabytes.
        const mem = await wasmMB(page);
        console.log(`# memory with ${workers} worker(s): page wasm ${mem.page.toFixed(1)} MB, workers' ${mem.workers.map((m) => m.toFixed(1)).join(' + ')} MB`);
        assert.equal(mem.workers.length, workers);
        if (pool === 'copies' || workers === 1) {
          assert.ok(mem.workers.every((m) => m > 98.4), JSON.stringify(mem));
        } else {
          // Split by rows: about one copy and a half between them (the lead's whole, the
          // second's half of every matrix), against 2.8 for whole copies.
          const all = mem.workers.reduce((a, m) => a + m, 0);
          assert.ok(all < 2 * 98.4, `the two workers hold ${all.toFixed(1)} MB in all`);
          assert.ok(Math.min(...mem.workers) < 64, JSON.stringify(mem));
          assert.equal(await page.getAttribute('#pg-worker', 'data-shares'), '2');
        }
        assert.ok(mem.page < 64, `the page's thread holds ${mem.page.toFixed(1)} MB of wasm memory`);
        await setForm(page, { grammar: '(yes|no|maybe)', maxTokens: 4, seed: '11' });
        await page.fill('#pg-prompt', 'Is the sky green? Answer with one lowercase word: yes, no or maybe.');
        await page.setChecked('#pg-compare-mode', true);
        for (const box of await page.locator('.pg-compare-method').all()) {
          await box.setChecked(['lcd', 'cars'].includes(await box.getAttribute('value')));
        }
        await page.fill('#pg-budget', '40');
        // Most workers busy at once, polled while the run goes.
        await page.evaluate(() => {
          window.__mostBusy = 0;
          window.__busyPoll = setInterval(() => {
            const n = Number(document.querySelector('#pg-worker').dataset.busy);
            window.__mostBusy = Math.max(window.__mostBusy, n);
          }, 50);
        });
        const r = await measured(page);
        const mostBusy = await page.evaluate(() => { clearInterval(window.__busyPoll); return window.__mostBusy; });
        assert.equal(r.state, 'done', r.message);
        const columns = await page.evaluate(() => Object.fromEntries(
          [...document.querySelectorAll('.compare-col')].map((c) => [c.dataset.method, {
            calls: Number(c.dataset.lmCalls),
            drawn: [...c.querySelectorAll('.output-row')].filter((row) => Number(row.dataset.count) > 0)
              .map((row) => `${row.dataset.text}×${row.dataset.count}`),
          }])));
        assert.deepEqual(Object.keys(columns).sort(), ['cars', 'lcd']);
        for (const c of Object.values(columns)) {
          assert.equal(c.calls, 40);
          assert.ok(c.drawn.length > 0, JSON.stringify(columns));
        }
        // Whole copies run the two samplers side by side; shares run both on the lead.
        if (workers === 2) assert.equal(mostBusy, pool === 'copies' ? 2 : 1, `most workers busy at once, ${pool}`);
        results[`${workers} ${pool}`] = columns;
        figures[`compare lcd + cars, 40 LM calls each, ${workers} worker${workers > 1 ? 's' : ''}${workers > 1 ? ` (${pool})` : ''}`] = {
          seconds: r.secs, fps: r.fps, most_busy_at_once: mostBusy,
        };
        console.log(`${workers} worker(s), ${pool}: ${r.secs} s, ${r.fps} frames/s, ${JSON.stringify(columns)}`);
        await page.screenshot({ path: join(ARTIFACTS, `worker-pool-${workers}-${pool}.png`), fullPage: true });
      }
      assert.deepEqual(results['2 copies'], results['1 copies']);
      assert.deepEqual(results['2 shares'], results['1 copies']);
    });
  });

  it('an SMC run shares its particles with an idle worker, with the same samples', async () => {
    await sharedWithIdleWorker('smc-gcd, 8 particles, 16 tokens', { n: 1 }, async (page) => {
      await page.selectOption('#pg-method', 'smc-gcd');
      await page.fill('#pg-particles', '8');
    });
  });

  it('an SMC run of more particles than the buffer holds splits them by sequence (whole copies) or its products in groups of particles (shares), with the same samples', async () => {
    await shared.step(async (page) => {
      const results = {};
      for (const [workers, pool] of [[1, 'copies'], [2, 'copies'], [2, 'shares']]) {
        await openPool(page, workers, pool === 'shares' ? '' : `&pool=${pool}`); // shares: the default
        await setForm(page, { grammar: '[0-9]{4}-[0-9]{2}-[0-9]{2}', maxTokens: 16, n: 1, seed: '1' });
        await page.fill('#pg-prompt', 'Reply with today\'s date in the format YYYY-MM-DD and nothing else.');
        await page.selectOption('#pg-method', 'smc-gcd');
        await page.fill('#pg-particles', '12');
        const before = Number(await page.getAttribute('#pg-worker', 'data-helped'));
        const r = await measured(page);
        assert.equal(r.state, 'done', r.message);
        await refreshed(page, 2);
        const helped = Number(await page.getAttribute('#pg-worker', 'data-helped')) - before;
        if (workers === 1 || pool === 'shares') assert.equal(helped, 0);
        else assert.ok(helped > 0, '12 particles do not fit the buffer: the idle worker computed some of them');
        assert.ok(r.outputs.length > 0, r.message);
        results[`${workers} ${pool}`] = r.outputs;
        console.log(`smc-gcd, 12 particles, ${workers} worker(s), ${pool}: ${r.secs} s, helped ${helped}, ${JSON.stringify(r.outputs)}`);
      }
      assert.deepEqual(results['2 copies'], results['1 copies']);
      assert.deepEqual(results['2 shares'], results['1 copies']);
    });
  });

  it('a rejection sampler\'s batch of generations is shared with an idle worker, with the same samples', async () => {
    await sharedWithIdleWorker('ars, batch 4, 2 dates', { n: 2 }, async (page) => {
      await page.selectOption('#pg-method', 'ars');
      await page.fill('#pg-batch', '4');
    });
  });

  it('one sequence\'s matrix products are shared with an idle worker, with the same samples', async () => {
    await shared.step(async (page) => {
      const results = {};
      for (const split of ['off', 'on']) {
        await open(page, `?backend=cpu&workers=2${split === 'off' ? '&split=off' : ''}`, 'ready');
        await unlessCrash(page, page.waitForFunction(
          () => Number(document.querySelector('#pg-worker').dataset.workers) === 2,
          null, { timeout: LOAD_MS, polling: 250 }));
        // xtask serves the page cross-origin isolated: the pool gets its split buffer.
        assert.equal(await page.evaluate(() => self.crossOriginIsolated), true);
        await setForm(page, { n: 2, seed: '3' });
        await prefillDone(page);
        const before = await page.getAttribute('#pg-worker', 'data-split');
        const r = await measured(page);
        assert.equal(r.state, 'done', r.message);
        await refreshed(page, 2);
        const after = await page.getAttribute('#pg-worker', 'data-split');
        if (split === 'off') assert.equal(after, 'off');
        else assert.ok(Number(after) > Number(before), `chunks computed by the idle worker: ${before} → ${after}`);
        assert.ok(r.outputs.length > 0, r.message);
        results[split] = r.outputs;
        figures[`lcd, 2 samples, one sequence at a time, products ${split === 'on' ? 'shared by 2 workers' : 'in 1 worker'}`] = {
          seconds: r.secs, chunks_computed_by_the_idle_worker: split === 'on' ? Number(after) - Number(before) : 0,
        };
        console.log(`products ${split}: ${r.secs} s, chunks ${before} → ${after}, ${JSON.stringify(r.outputs)}`);
      }
      assert.deepEqual(results.on, results.off);
    });
  });

  it('a share\'s holder that crashes mid-run: the lead computes its rows, the same samples, and it is replaced', async () => {
    await shared.step(async (page) => {
      await openPool(page, 2, '&pool=shares');
      assert.equal(await page.getAttribute('#pg-worker', 'data-shares'), '2');
      assert.match((await worker(page)).text, /split the model by rows: the first holds it whole .*the second holds a half of every matrix's rows .*the first takes over any rows a busy one has not started/);
      await setForm(page, { grammar: '[a-z ]{1,60}', maxTokens: 60, n: 5 });
      const reference = await measured(page);
      assert.equal(reference.state, 'done', reference.message);
      await startLongRun(page);
      const errorsBefore = page.straitErrors.length;
      const t0 = Date.now();
      assert.ok(await page.evaluate(() => window.__straitCrashWorker(1)), 'share 1\'s holder to crash');
      await unlessCrash(page, page.waitForFunction(
        () => ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: RUN_MS, polling: 100 }));
      const ended = Date.now() - t0;
      const crashed = await runResult(page);
      assert.equal(crashed.state, 'done', crashed.message);
      assert.deepEqual(crashed.outputs, reference.outputs);
      await page.waitForFunction(() => document.querySelector('#pg-worker').dataset.replaced === '1'
        && document.querySelector('#pg-worker').dataset.workers === '2', null, { timeout: 60_000, polling: 250 })
        .catch(async () => assert.fail(`no new worker: ${(await worker(page)).text}`));
      assert.deepEqual(page.straitErrors.slice(errorsBefore), []);
      console.log(`# the run ended ${ended} ms after share 1's holder crashed, with the samples of the run before`);
      await setForm(page, { grammar: '(yes|no|maybe)', maxTokens: 4, n: 1 });
      const after = await measured(page);
      assert.equal(after.state, 'done', after.message);
      assert.match(after.outputs[0], /^(yes|no|maybe)×1$/);
      assert.ok(Number(await page.getAttribute('#pg-worker', 'data-split')) > 0, 'the new holder computes rows');
    });
  });

  it('a second run on the same prompt finds it in the caches the first left, with the same samples', async () => {
    await shared.step(async (page) => {
      await openPool(page, 1);
      await setForm(page, { n: 2, seed: '5' });
      const first = await measured(page);
      const second = await measured(page);
      for (const r of [first, second]) assert.equal(r.state, 'done', r.message);
      assert.deepEqual(second.outputs, first.outputs);
      figures['lcd, 2 samples, the same run twice: time to the first token (ms)'] = {
        first_run: first.firstTokenMs, second_run: second.firstTokenMs,
      };
      console.log(`same run twice: first token after ${first.firstTokenMs} ms, then ${second.firstTokenMs} ms; ${JSON.stringify(first.outputs)}`);
    });
  });

  it('a worker that cannot start leaves the page sampling on its thread', async () => {
    await shared.step(async (page) => {
      await page.route('**/worker.js', (route) => route.fulfill({ status: 404, body: 'gone' }));
      await open(page, '?backend=cpu', 'failed');
      const w = await worker(page);
      assert.match(w.text, /failed/);
      // No worker: the page's thread reads the weights the first time it must run the model.
      const before = await wasmMB(page);
      assert.ok(before.page < 64, `the page's thread holds ${before.page.toFixed(1)} MB before its first run`);
      await setForm(page, { grammar: '(yes|no|maybe)', maxTokens: 4 });
      const r = await measured(page);
      assert.equal(r.state, 'done', r.message);
      assert.match(r.outputs[0], /^(yes|no|maybe)×1$/);
      const after = await wasmMB(page);
      console.log(`# memory without workers: page wasm ${before.page.toFixed(1)} MB before the first run, ${after.page.toFixed(1)} MB after`);
      assert.ok(after.page > 98.4, `the page's thread ran the model with ${after.page.toFixed(1)} MB`);
      await page.screenshot({ path: join(ARTIFACTS, 'worker-failed.png'), fullPage: true });
      await page.unroute('**/worker.js');
    });
  });
});
