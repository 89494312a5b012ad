// Where the page's time goes during a run, by function, per thread: Chrome's sampling
// profiler (a trace with the `v8.cpu_profiler` category) over one real-model example opened
// by its link, without WebGPU, the playback at its fastest, from the moment the model is
// ready (the link starts the run itself, so its first few hundred ms may be missed) to
// the run's end. The wasm keeps its
// name section, so the page's Rust functions appear by name. Prints, for each thread with
// samples (the page, each worker), the functions with the most samples: self (in the
// function itself) and total (anywhere on the stack). Figures only, nothing asserted.
//
//   STRAIT_URL=http://127.0.0.1:8080/ node bench/profile.mjs xml-doctype [rows]
//
// `quick` instead of an example profiles one sequence's decode: the quick form's `lm` run of
// 64 tokens on the CPU path (as `bench/page.mjs` runs it), the pool sharing its products.
import { BASE_URL, launch, waitForPhase } from '../lib.mjs';

const id = process.argv[2] ?? 'xml-doctype';
const rows = Number(process.argv[3] ?? 25);
const b = await launch({ webgpu: false, openDetails: true, viewport: { width: 1280, height: 900 } });
const events = [];
await b.page.addInitScript(() => {
  // The playback at its fastest, as first_result.mjs has it.
  new MutationObserver(() => {
    const speed = document.querySelector('#pg-speed');
    if (speed && speed.value !== speed.max) {
      speed.value = speed.max;
      speed.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }).observe(document, { attributes: true, subtree: true, childList: true });
});
try {
  const cdp = await b.context.newCDPSession(b.page);
  cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
  const done = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
  const quick = id === 'quick';
  await b.page.goto(quick ? `${BASE_URL}?backend=cpu` : `${BASE_URL}#example=${id}`);
  await waitForPhase(b.page, ['ready'], 300_000);
  if (quick) {
    await b.page.waitForFunction(() => {
      const w = document.querySelector('#pg-worker')?.dataset;
      return w && w.state !== 'loading' && Number(w.workers) >= Number(w.planned);
    }, null, { timeout: 300_000, polling: 250 });
    await b.page.fill('#prompt', 'Write a long story about a dragon who learns to fly.');
    await b.page.fill('#regex', '.*');
    await b.page.fill('#max-tokens', '64');
    await b.page.check('#method-lm');
  }
  await cdp.send('Tracing.start', {
    transferMode: 'ReportEvents',
    traceConfig: { includedCategories: ['disabled-by-default-v8.cpu_profiler', '__metadata'] },
  });
  const t0 = Date.now();
  if (quick) await b.page.locator('#prompt').press('Control+Enter');
  await b.page.waitForFunction(
    (quick) => ['done', 'stopped', 'error'].includes(
      document.querySelector(quick ? '#run-status' : '#pg-status')?.dataset.state),
    quick, { timeout: 240_000, polling: 100 });
  const runMs = Date.now() - t0;
  await cdp.send('Tracing.end');
  await done;
  report(events, runMs);
} finally {
  await b.close();
}

function report(events, runMs) {
  const names = new Map(); // "pid:tid" → thread name
  const profiles = new Map(); // "pid:id" → { thread, nodes: Map, samples: [] }
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph === 'M' && e.name === 'thread_name') names.set(key, e.args.name);
    // A profile's 'Profile' event comes from the thread it samples; its chunks may come
    // from the profiler's own thread, so they are matched by the profile's id.
    if (e.name === 'Profile') {
      const p = profile(profiles, `${e.pid}:${e.id}`);
      p.thread = key;
    }
    if (e.name !== 'ProfileChunk') continue;
    const p = profile(profiles, `${e.pid}:${e.id}`);
    const cpu = e.args.data.cpuProfile ?? {};
    for (const n of cpu.nodes ?? []) p.nodes.set(n.id, n);
    p.samples.push(...(cpu.samples ?? []));
  }
  console.log(`traced for ${runMs} ms (from the model ready to the run's end)`);
  for (const p of profiles.values()) {
    const self = new Map();
    const total = new Map();
    let counted = 0;
    for (const s of p.samples) {
      const node = p.nodes.get(s);
      if (!node) continue;
      const name = label(node);
      if (name === '(idle)' || name === '(program)') continue;
      counted += 1;
      self.set(name, (self.get(name) ?? 0) + 1);
      const seen = new Set();
      for (let n = node; n; n = p.nodes.get(n.parent)) {
        const l = label(n);
        if (!seen.has(l)) total.set(l, (total.get(l) ?? 0) + 1);
        seen.add(l);
      }
    }
    if (counted < 100) continue;
    console.log(`\n## ${names.get(p.thread) ?? p.thread}: ${counted} busy samples (of ${p.samples.length})`);
    console.log('| function | self % | total % |');
    console.log('|---|---:|---:|');
    const pct = (n) => ((100 * (n ?? 0)) / counted).toFixed(1);
    for (const [name, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
      console.log(`| ${name} | ${pct(n)} | ${pct(total.get(name))} |`);
    }
    console.log('\nTotals of some frames: ');
    for (const want of ['attention_head', 'forward_chunk', 'matmul', 'compute_chunk', 'log_softmax', 'compute_mask', 'extend_all', 'prepare']) {
      const hits = [...total].filter(([n]) => n.includes(want));
      if (hits.length) console.log(`- ${want}: ${hits.map(([n, c]) => `${n.slice(0, 60)} ${pct(c)}%`).join('; ')}`);
    }
  }
}

function profile(profiles, key) {
  if (!profiles.has(key)) profiles.set(key, { thread: key, nodes: new Map(), samples: [] });
  return profiles.get(key);
}

function label(node) {
  const f = node.callFrame ?? {};
  return f.functionName || (f.url ? `(anonymous ${f.url.split('/').pop()})` : '(root)');
}
