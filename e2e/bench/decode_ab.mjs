// One sequence's decode in the page, several builds side by side: each base (say, the
// build before a change and after it, each served with COOP/COEP so the pool's workers
// share the products) is loaded once in its own tab, then the quick form's `lm` run of
// 64 tokens is repeated in each tab in turn, ROUNDS times (default 8), so that the
// machine's drift falls on every build alike. Prints each run's tokens/s, then per base
// the median and, against the first base, the median of the per-round ratios. Figures
// only, nothing asserted.
//
//   STRAIT_BASES=http://127.0.0.1:8080/,http://127.0.0.1:8081/ ROUNDS=8 node bench/decode_ab.mjs
import { launch, waitForPhase } from '../lib.mjs';

const bases = (process.env.STRAIT_BASES ?? '').split(',').filter(Boolean);
if (bases.length < 1) throw new Error('STRAIT_BASES: the builds to compare, comma-separated');
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const TOKENS = Number(process.env.STRAIT_BENCH_TOKENS ?? 64);
const PROMPT = 'Write a long story about a dragon who learns to fly.';
const LOAD_MS = 300_000;
const RUN_MS = 600_000;

const b = await launch({ webgpu: false });
const median = (v) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)];
try {
  const pages = [];
  for (const base of bases) {
    const page = pages.length === 0 ? b.page : await b.page.context().newPage();
    await page.goto(`${base}?backend=cpu`);
    await waitForPhase(page, ['ready'], LOAD_MS);
    await page.waitForFunction(() => {
      const w = document.querySelector('#pg-worker')?.dataset;
      return w && w.state !== 'loading' && Number(w.workers) >= Number(w.planned);
    }, null, { timeout: LOAD_MS, polling: 250 });
    await page.fill('#prompt', PROMPT);
    await page.fill('#regex', '.*');
    await page.fill('#max-tokens', String(TOKENS));
    await page.fill('#seed', '1');
    await page.setChecked('#chat', true);
    await page.check('#method-lm');
    pages.push(page);
  }
  const rates = bases.map(() => []);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [i, page] of pages.entries()) {
      await page.bringToFront();
      const before = await page.locator('#stats').textContent().catch(() => '');
      const pool = () => page.evaluate(() => ({ ...document.querySelector('#pg-worker')?.dataset }));
      const poolBefore = await pool();
      await page.locator('#prompt').press('Control+Enter');
      await page.waitForFunction(
        (old) => ['done', 'stopped', 'error'].includes(document.querySelector('#run-status')?.dataset.state)
          && document.querySelector('#stats')?.textContent !== old,
        before, { timeout: RUN_MS, polling: 100 },
      );
      const stats = await page.locator('#stats').textContent();
      const rate = Number(stats.match(/([0-9.]+) tokens\/s/)?.[1]);
      rates[i].push(rate);
      // The worker line reads the pool four times a second.
      await page.waitForTimeout(600);
      const poolAfter = await pool();
      const delta = (k) => Number(poolAfter[k] ?? 0) - Number(poolBefore[k] ?? 0);
      console.log(JSON.stringify({
        round, base: bases[i], decode_tok_s: rate,
        products_shared: delta('splitOffers'), chunks_helped: delta('split'),
      }));
    }
  }
  for (const [i, base] of bases.entries()) {
    const ratios = rates[i].map((r, k) => r / rates[0][k]);
    console.log(`${base}: median ${median(rates[i]).toFixed(1)} tokens/s, per-round ratio to the first base: median ${median(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(', ')})`);
  }
} finally {
  await b.close();
}
