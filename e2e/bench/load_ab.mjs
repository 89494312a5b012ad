// What loading the model costs the tab, several builds side by side: each base (say, the
// build before a change and after it, served with COOP/COEP) is opened in turn, ROUNDS
// times (default 3), on the CPU path with `?workers=N` (default 2), the model read from
// Cache Storage (a first visit per base fills it, not counted). Prints per visit the ms
// from navigation to the model ready and to the whole pool ready, and the wasm memory
// the page's thread and each worker hold then; per base, the medians. Figures only,
// nothing asserted.
//
//   STRAIT_BASES=http://127.0.0.1:8080/,http://127.0.0.1:8081/ ROUNDS=3 node bench/load_ab.mjs
import { launch, waitForPhase } from '../lib.mjs';

const bases = (process.env.STRAIT_BASES ?? '').split(',').filter(Boolean);
if (bases.length < 1) throw new Error('STRAIT_BASES: the builds to compare, comma-separated');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WORKERS = Number(process.env.WORKERS ?? 2);
const LOAD_MS = 300_000;
const MB = 1024 * 1024;

const b = await launch({ webgpu: false });
const median = (v) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)];

/** Opens `base` and waits for the model and then the pool; returns the times and memory. */
async function visit(page, base) {
  await page.goto('about:blank');
  const t0 = Date.now();
  await page.goto(`${base}?backend=cpu&workers=${WORKERS}`);
  await waitForPhase(page, ['ready'], LOAD_MS);
  const ready = Date.now() - t0;
  await page.waitForFunction((n) => {
    const w = document.querySelector('#pg-worker')?.dataset;
    return w && w.state === 'ready' && Number(w.workers) === n;
  }, WORKERS, { timeout: LOAD_MS, polling: 50 });
  const pool = Date.now() - t0;
  const pageWasm = await page.evaluate(() => window.__straitWasmBytes?.() ?? 0);
  const workers = await Promise.all(page.workers().map((w) => w.evaluate(() => self.__straitWasmBytes?.() ?? 0).catch(() => 0)));
  const source = await page.locator('#model-info').textContent();
  return { ready, pool, page: pageWasm / MB, workers: workers.filter((x) => x > 0).map((x) => x / MB), cached: /cache/.test(source) };
}

try {
  for (const base of bases) await visit(b.page, base);
  const seen = bases.map(() => []);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [i, base] of bases.entries()) {
      const v = await visit(b.page, base);
      seen[i].push(v);
      const total = v.page + v.workers.reduce((a, x) => a + x, 0);
      console.log(`round ${round} ${base}: model ready ${v.ready} ms, pool of ${v.workers.length} ready ${v.pool} ms; wasm: page ${v.page.toFixed(1)} MB, workers ${v.workers.map((x) => x.toFixed(1)).join(' + ')} MB, in all ${total.toFixed(1)} MB${v.cached ? '' : ' (not from the cache)'}`);
    }
  }
  for (const [i, base] of bases.entries()) {
    const s = seen[i];
    const all = s.map((v) => v.page + v.workers.reduce((a, x) => a + x, 0));
    console.log(`${base}: medians of ${s.length}: model ready ${median(s.map((v) => v.ready))} ms, pool ready ${median(s.map((v) => v.pool))} ms, page wasm ${median(s.map((v) => v.page)).toFixed(1)} MB, wasm in all ${median(all).toFixed(1)} MB`);
  }
} finally {
  await b.close();
}
