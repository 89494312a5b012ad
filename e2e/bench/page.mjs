// `cargo xtask bench page`: in one headless Chromium, our page's decode (the CPU path in its
// sampling workers, and the WebGPU path where there is an adapter) beside wllama's
// (llama.cpp in wasm) on the same GGUF. Our CPU path three times: one worker computing the
// sequence alone (`?split=off`), the pool's workers each with a whole copy of the model
// sharing each matrix product (`?pool=copies`), and the pool splitting the model by rows
// (the default: `lm::shard`, each worker computing its share of each product); the page
// cross-origin isolated as xtask serves it, the workers' wasm memory printed for each;
// wllama on 1, 2 and every core's threads. STRAIT_BENCH_ROUNDS rounds (default 2),
// interleaved (ours alone, copies, shares, wllama 1, 2, all), then the ratios per round.
// Figures only, nothing asserted.
// STRAIT_URL: where xtask serves dist/ (with wllama.html and wllama/ beside it).
import { BASE_URL, launch, waitForPhase } from '../lib.mjs';

const TOKENS = Number(process.env.STRAIT_BENCH_TOKENS ?? 64);
const PROMPT = 'Write a long story about a dragon who learns to fly.';
const LOAD_MS = 300_000;
const RUN_MS = 600_000;

const QUERY = { alone: '&split=off', copies: '&pool=copies', shares: '&pool=shares' };

/** Our page: load the model on `backend`, one `lm` run of `tokens` tokens, the rate the
 *  page shows (tokens after the first over the time since the first). `pool`: `alone`
 *  (one worker computes the sequence, `?split=off`), `copies` (the workers, each with the
 *  whole model, share its products) or `shares` (the workers split the model by rows). */
async function strait(page, backend = 'cpu', tokens = TOKENS, pool = 'shares') {
  const split = pool !== 'alone';
  await page.goto(`${BASE_URL}?backend=${backend}${QUERY[pool]}`);
  await waitForPhase(page, ['ready'], LOAD_MS);
  // Every worker of the pool loaded (they load one after another after the page).
  await page.waitForFunction(() => {
    const w = document.querySelector('#pg-worker')?.dataset;
    return w && w.state !== 'loading' && Number(w.workers) >= Number(w.planned);
  }, null, { timeout: LOAD_MS, polling: 250 });
  const poolBefore = await page.evaluate(() => ({ ...document.querySelector('#pg-worker')?.dataset }));
  await page.fill('#prompt', PROMPT);
  await page.fill('#regex', '.*');
  await page.fill('#max-tokens', String(tokens));
  await page.fill('#seed', '1');
  await page.setChecked('#chat', true);
  await page.check('#method-lm');
  await page.locator('#prompt').press('Control+Enter');
  await page.waitForFunction(
    () => ['done', 'stopped', 'error'].includes(document.querySelector('#run-status')?.dataset.state),
    null,
    { timeout: RUN_MS, polling: 250 },
  );
  const stats = await page.locator('#stats').textContent();
  const done = Number(stats.match(/^(\d+) tokens/)?.[1]);
  const rate = Number(stats.match(/([0-9.]+) tokens\/s/)?.[1]);
  const first = Number(stats.match(/first token after (\d+) ms/)?.[1]);
  const where = await page.locator('#backend-info').textContent();
  // The worker line reads the pool four times a second.
  await page.waitForTimeout(600);
  const line = await page.evaluate(() => ({ ...document.querySelector('#pg-worker')?.dataset }));
  const delta = (k) => Number(line[k] ?? 0) - Number(poolBefore[k] ?? 0);
  const wasm = await Promise.all(page.workers().map((w) => w.evaluate(() => self.__straitWasmBytes?.() ?? 0).catch(() => 0)));
  return {
    engine: `strait-page-${backend}${backend === 'cpu' ? `-${pool}` : ''}`,
    runs_on: where.trim(),
    workers: Number(line.workers),
    shares: Number(line.shares ?? 0),
    workers_wasm_mb: wasm.filter((x) => x > 0).map((x) => +(x / 2 ** 20).toFixed(1)),
    // The products shared, the chunks the idle worker computed, and the driver's wait for
    // them, per token of the run (prefill included).
    split_products_per_token: split ? delta('splitOffers') / done : 0,
    split_chunks_per_token: split ? delta('split') / done : 0,
    split_wait_ms_per_token: split ? delta('splitWaitedUs') / 1000 / done : 0,
    cross_origin_isolated: await page.evaluate(() => self.crossOriginIsolated),
    decode_tokens: done,
    decode_tok_s: rate,
    first_token_ms: first,
  };
}

/** Tokens of the WebGPU run: on a software adapter (SwiftShader) a token takes seconds. */
const GPU_TOKENS = Number(process.env.STRAIT_BENCH_GPU_TOKENS ?? 16);

/** wllama on `threads` threads (2 needs the COOP/COEP headers xtask serves). */
async function wllama(page, threads) {
  await page.goto(`${BASE_URL}wllama.html?threads=${threads}&tokens=${TOKENS}&prompt=${encodeURIComponent(PROMPT)}`);
  await page.waitForFunction(() => document.querySelector('#result')?.dataset.done, null, {
    timeout: RUN_MS,
    polling: 250,
  });
  const text = await page.locator('#result').textContent();
  if ((await page.getAttribute('#result', 'data-done')) !== 'ok') throw new Error(text);
  return JSON.parse(text);
}

// WebGPU flags on: the page still needs an adapter to start (issue 14); `?backend=cpu`
// then runs the model on the CPU path in its worker.
const ROUNDS = Number(process.env.STRAIT_BENCH_ROUNDS ?? 2);
const b = await launch({ webgpu: true });
try {
  const cores = await b.page.evaluate(() => navigator.hardwareConcurrency);
  const threads = [...new Set([1, 2, cores])];
  for (let round = 1; round <= ROUNDS; round++) {
    const alone = await strait(b.page, 'cpu', TOKENS, 'alone');
    console.log(JSON.stringify({ round, ...alone }));
    const copies = await strait(b.page, 'cpu', TOKENS, 'copies');
    console.log(JSON.stringify({ round, ...copies }));
    const shared = await strait(b.page, 'cpu', TOKENS, 'shares');
    console.log(JSON.stringify({ round, ...shared }));
    const theirs = {};
    for (const t of threads) {
      theirs[t] = await wllama(b.page, t);
      console.log(JSON.stringify({ round, ...theirs[t] }));
    }
    const best = Math.max(...threads.map((t) => theirs[t].decode_tok_s));
    console.log(JSON.stringify({
      round,
      ratio: 'decode tokens/s',
      shared_over_alone: shared.decode_tok_s / alone.decode_tok_s,
      shared_over_copies: shared.decode_tok_s / copies.decode_tok_s,
      copies_over_wllama_best: copies.decode_tok_s / best,
      alone_over_wllama_1: alone.decode_tok_s / theirs[1].decode_tok_s,
      ...Object.fromEntries(threads.map((t) => [`shared_over_wllama_${t}`, shared.decode_tok_s / theirs[t].decode_tok_s])),
      shared_over_wllama_best: shared.decode_tok_s / best,
      first_token_shared_over_alone: shared.first_token_ms / alone.first_token_ms,
    }));
  }
  // The WebGPU path where the browser offers an adapter (`?backend=webgpu` forces it even
  // on a software adapter, where `auto` would choose the CPU).
  try {
    console.log(JSON.stringify(await strait(b.page, 'webgpu', GPU_TOKENS)));
  } catch (e) {
    console.log(JSON.stringify({ engine: 'strait-page-webgpu', skipped: e.message.split('\n')[0] }));
  }
} catch (e) {
  console.error(`bench page failed: ${e.message}\n--- console ---\n${b.logs.join('\n')}`);
  process.exitCode = 1;
} finally {
  await b.close();
}
