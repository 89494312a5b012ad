// The page's time to a first result, per real-model example (issue: faithful by default):
// each example opened by its link in a fresh page load, without WebGPU (the CPU path in
// wasm, the sampling workers on every core), the playback at its fastest. Prints, per
// example and per served build, the ms from the run's start to the first sample in the
// results view and to the run's end. Figures only, nothing asserted.
//
//   STRAIT_BASES=http://127.0.0.1:8080/,http://127.0.0.1:8081/ node bench/first_result.mjs [ids…]
//
// An id may name another sampler and max tokens, `sygus-slia:mcmc-restart:96`: the page is
// then opened without a link, the example and the sampler chosen in the form, and Run
// clicked, as a user trying another sampler would (`sqlite-test:` keeps the example's
// sampler); STRAIT_READ_MS=N waits N ms between the choice and the click, as a reader
// would (the form's prompt is prefilled in the idle workers meanwhile).
//
// Several bases (say, the build before a change and after it, each served by
// `python3 -m http.server`) are opened alternately, example by example, so the machine's
// drift falls on both.
import { BASE_URL, launch, waitForPhase } from '../lib.mjs';

const IDS = ['date', 'phone', 'arithmetic', 'json-x-integer', 'tool-call', 'sqlite-test', 'xml-doctype',
  'smiles-acrylate', 'sygus-slia', 'sygus-bv4', 'pddl-satellite'];
const bases = (process.env.STRAIT_BASES ?? BASE_URL).split(',');
const ids = process.argv.length > 2 ? process.argv.slice(2) : IDS;
const LOAD_MS = 300_000;
const RUN_MS = 240_000;
const READ_MS = Number(process.env.STRAIT_READ_MS ?? 0);

const b = await launch({ webgpu: false, openDetails: true, viewport: { width: 1280, height: 900 } });
await b.page.addInitScript(() => {
  // Marks the run's start and its first result; keeps the playback at its fastest.
  const seen = () => {
    if (!window.__runAt && document.querySelector('#pg-status')?.dataset.state === 'running') window.__runAt = performance.now();
    const n = Number(document.querySelector('#view-results')?.dataset.samples ?? 0);
    if (window.__runAt && n >= 1 && !window.__firstAt) window.__firstAt = performance.now();
    const speed = document.querySelector('#pg-speed');
    if (speed && speed.value !== speed.max) {
      speed.value = speed.max;
      speed.dispatchEvent(new Event('input', { bubbles: true }));
    }
  };
  new MutationObserver(seen).observe(document, { attributes: true, subtree: true, childList: true });
});
console.log('| example | sampler | build | first result ms | run over ms | samples | state |');
console.log('|---|---|---|---:|---:|---:|---|');
try {
  for (const entry of ids) {
    const [id, method, maxTokens] = entry.split(':');
    const inForm = entry.includes(':');
    for (const base of bases) {
      await b.page.goto('about:blank');
      if (inForm) {
        await b.page.goto(base);
        await waitForPhase(b.page, ['ready'], LOAD_MS);
        await b.page.evaluate(() => { document.querySelector('.pg-side').open = true; });
        await b.page.selectOption('#pg-example', id);
        if (method) await b.page.selectOption('#pg-method', method);
        if (maxTokens) await b.page.fill('#pg-max-tokens', maxTokens);
        await b.page.waitForTimeout(READ_MS);
        await b.page.click('#pg-run');
      } else {
        await b.page.goto(`${base}#example=${id}`);
        await waitForPhase(b.page, ['ready'], LOAD_MS);
      }
      const ended = await b.page.waitForFunction(() => window.__runAt
        && ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status')?.dataset.state),
      null, { timeout: RUN_MS, polling: 100 }).then(() => true, () => false);
      const r = await b.page.evaluate(() => ({
        run: window.__runAt, first: window.__firstAt, now: performance.now(),
        method: document.querySelector('#pg-method')?.value,
        state: document.querySelector('#pg-status')?.dataset.state,
        samples: document.querySelector('#view-results')?.dataset.samples,
      }));
      const ms = (t) => (t && r.run ? (t - r.run).toFixed(0) : '–');
      console.log(`| ${id}${maxTokens ? ` (${maxTokens} tokens)` : ''} | ${r.method} | ${base} | ${ms(r.first)} | ${ended ? ms(r.now) : `> ${RUN_MS}`} | ${r.samples} | ${r.state} |`);
    }
  }
} finally {
  await b.close();
}
