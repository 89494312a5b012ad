// Experiment: shares run with variants injected after Run; per-thread CPU from /proc.
import { BASE_URL, launch, waitForPhase } from './lib.mjs';
import { readdirSync, readFileSync } from 'node:fs';
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const VARIANTS = JSON.parse(process.env.VARIANTS ?? '{"shown":""}');
const POOL = process.env.POOL ?? '';
function chromePids() {
  const out = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try { const c = readFileSync(`/proc/${p}/cmdline`, 'utf8'); if (c.includes('strait-e2e-')) out.push(p); } catch {}
  }
  return out;
}
function threadCpu() {
  const m = {};
  for (const p of chromePids()) {
    let tids; try { tids = readdirSync(`/proc/${p}/task`); } catch { continue; }
    for (const t of tids) {
      try {
        const comm = readFileSync(`/proc/${p}/task/${t}/comm`, 'utf8').trim().replace(/\d+$/, '');
        const st = readFileSync(`/proc/${p}/task/${t}/stat`, 'utf8');
        const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
        const ms = (Number(f[11]) + Number(f[12])) * 10;
        const ty = (readFileSync(`/proc/${p}/cmdline`, 'utf8').match(/--type=([a-z-]+)/)?.[1] ?? 'browser');
        m[`${p}/${t}`] = { comm: `${ty}:${comm}`, ms };
      } catch {}
    }
  }
  return m;
}
function diff(a, b) {
  const by = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v.ms - (a[k]?.ms ?? 0);
    if (d > 0) by[v.comm] = (by[v.comm] ?? 0) + d;
  }
  return Object.fromEntries(Object.entries(by).sort((x, y) => y[1] - x[1]).slice(0, 12));
}
const b = await launch({ webgpu: true });
const page = b.page;
async function run(css) {
  await page.goto(`${BASE_URL}?backend=cpu${POOL}`);
  await waitForPhase(page, ['ready'], 300000);
  await page.waitForFunction(() => { const w = document.querySelector('#pg-worker')?.dataset; return w && w.state !== 'loading' && Number(w.workers) >= Number(w.planned); }, null, { timeout: 300000, polling: 250 });
  const before = { ...(await page.evaluate(() => ({ ...document.querySelector('#pg-worker')?.dataset }))) };
  await page.fill('#prompt', 'Write a long story about a dragon who learns to fly.');
  await page.fill('#regex', '.*'); await page.fill('#max-tokens', '64'); await page.fill('#seed', '1');
  await page.setChecked('#chat', true); await page.check('#method-lm');
  await page.waitForTimeout(1500);
  const c0 = threadCpu();
  await page.locator('#prompt').press('Control+Enter');
  if (css) await page.addStyleTag({ content: css });
  await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#run-status')?.dataset.state), null, { timeout: 600000, polling: 250 });
  const c1 = threadCpu();
  const stats = await page.locator('#stats').textContent();
  await page.waitForTimeout(600);
  const line = await page.evaluate(() => ({ ...document.querySelector('#pg-worker')?.dataset }));
  const done = Number(stats.match(/^(\d+) tokens/)?.[1]);
  const rate = Number(stats.match(/([0-9.]+) tokens\/s/)?.[1]);
  const wait = (Number(line.splitWaitedUs ?? 0) - Number(before.splitWaitedUs ?? 0)) / 1000 / done;
  return { rate, wait: +wait.toFixed(1), cpu: diff(c0, c1) };
}
for (let r = 1; r <= ROUNDS; r++) for (const [name, css] of Object.entries(VARIANTS)) {
  const x = await run(css);
  console.log(JSON.stringify({ r, name, ...x }));
}
await b.close();
