// `cargo xtask bench page`: in one headless Chromium, our page's decode (the CPU path in its
// sampling worker, and the WebGPU path where there is an adapter) beside wllama's
// (llama.cpp in wasm) on the same GGUF, 1 and 2 threads; one JSON line per engine, then
// the ratios of the CPU path. Figures only, nothing asserted.
// STRAIT_URL: where xtask serves dist/ (with wllama.html and wllama/ beside it).
import { BASE_URL, launch, waitForPhase } from '../lib.mjs';

const TOKENS = Number(process.env.STRAIT_BENCH_TOKENS ?? 64);
const PROMPT = 'Write a long story about a dragon who learns to fly.';
const LOAD_MS = 300_000;
const RUN_MS = 600_000;

/** Our page: load the model on `backend`, one `lm` run of `tokens` tokens, the rate the
 *  page shows (tokens after the first over the time since the first). */
async function strait(page, backend = 'cpu', tokens = TOKENS) {
  await page.goto(`${BASE_URL}?backend=${backend}`);
  await waitForPhase(page, ['ready'], LOAD_MS);
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
  return {
    engine: `strait-page-${backend}`,
    runs_on: where.trim(),
    threads: 1,
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
const b = await launch({ webgpu: true });
try {
  const ours = await strait(b.page);
  console.log(JSON.stringify(ours));
  // The WebGPU path where the browser offers an adapter (`?backend=webgpu` forces it even
  // on a software adapter, where `auto` would choose the CPU).
  try {
    console.log(JSON.stringify(await strait(b.page, 'webgpu', GPU_TOKENS)));
  } catch (e) {
    console.log(JSON.stringify({ engine: 'strait-page-webgpu', skipped: e.message.split('\n')[0] }));
  }
  for (const threads of [1, 2]) {
    const theirs = await wllama(b.page, threads);
    console.log(JSON.stringify(theirs));
    console.log(
      JSON.stringify({
        ratio: 'strait-page-cpu (1 worker) / wllama',
        wllama_threads: threads,
        decode: ours.decode_tok_s / theirs.decode_tok_s,
      }),
    );
  }
} catch (e) {
  console.error(`bench page failed: ${e.message}\n--- console ---\n${b.logs.join('\n')}`);
  process.exitCode = 1;
} finally {
  await b.close();
}
