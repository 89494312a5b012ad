// The playground in headless Chromium: every view renders for its sampler in toy mode,
// a permalink reproduces its samples, compare mode shows token masking's bias against
// CARS on G_sk beside the exact distribution, Stop and Step work, grammar errors are
// marked at their line and column, hostile links (wrong types included) open the default
// state with a message, a language too large to enumerate says so,
// JSONL export, and the same views with the real model. Each test leaves a screenshot in
// e2e/artifacts/playground-*.png. Figures (frames per second during a run, time from Run
// to the first token) are printed, never asserted.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ARTIFACTS, BASE_URL, DIST, launch, prefillDone, servePlain, unlessCrash, waitForPhase, withPage } from './lib.mjs';

const RUN_MS = 60_000;
const MODEL_FILE = join(dirname(ARTIFACTS), '..', 'assets', 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
const LOAD_MS = 300_000;
const REAL_RUN_MS = 300_000;
/** The speed slider's last position: every event at once. */
const FASTEST = '10';

let b;
let failed = false;

before(async () => {
  b = await launch({ webgpu: true });
});

after(async () => {
  if (failed) console.error(`--- page console ---\n${b.logs.join('\n')}`);
  await b.close();
});

/** Runs `body`; on failure saves `playground-<name>-failure.png`. */
async function step(name, body) {
  try {
    await body(b.page);
    await b.page.screenshot({ path: join(ARTIFACTS, `playground-${name}.png`), fullPage: true });
  } catch (e) {
    failed = true;
    await b.page.screenshot({ path: join(ARTIFACTS, `playground-${name}-failure.png`), fullPage: true }).catch(() => {});
    throw e;
  }
}

/** Opens `url` as a fresh document (a hash-only change would not reload the page). A link
 *  opened where the setup stacks above the stage (this browser is 1200 px wide) folds the
 *  setup; the tests open it, as a reader who wants to change the setup would. */
async function open(page, url = BASE_URL) {
  await page.goto('about:blank');
  await page.goto(url);
  await page.waitForSelector('#pg-run', { state: 'attached' });
  await page.evaluate(() => { document.querySelector('.pg-side').open = true; });
  await page.waitForSelector('#pg-run');
}

/** Fills the playground's form (single mode unless `compare`). */
async function setForm(page, f) {
  if (f.example) await page.selectOption('#pg-example', f.example);
  if (f.model) await page.selectOption('#pg-model', f.model);
  if (f.grammar !== undefined) await page.fill('#pg-grammar', f.grammar);
  if (f.kind) await page.selectOption('#pg-kind', f.kind);
  if (f.prompt !== undefined) await page.fill('#pg-prompt', f.prompt);
  if (f.method) await page.selectOption('#pg-method', f.method);
  for (const [key, id] of [['n', '#pg-n'], ['steps', '#pg-steps'], ['particles', '#pg-particles'],
    ['maxTokens', '#pg-max-tokens'], ['seed', '#pg-seed']]) {
    if (f[key] !== undefined) await page.fill(id, String(f[key]));
  }
  await page.setChecked('#pg-compare-mode', Boolean(f.compare));
  await page.fill('#pg-speed', f.speed ?? FASTEST);
}

/** Animation frames per second the page paints over the next `ms` milliseconds. */
function framesPerSecond(page, ms) {
  return page.evaluate((ms) => new Promise((resolve) => {
    let frames = 0;
    const t0 = performance.now();
    const tick = () => {
      frames++;
      if (performance.now() - t0 < ms) requestAnimationFrame(tick);
      else resolve(frames * 1000 / (performance.now() - t0));
    };
    requestAnimationFrame(tick);
  }), ms);
}

/** Resolves after the page has painted `n` more animation frames. */
function animationFrames(page, n) {
  return page.evaluate((n) => new Promise((resolve) => {
    let left = n;
    const tick = () => (--left <= 0 ? resolve() : requestAnimationFrame(tick));
    requestAnimationFrame(tick);
  }), n);
}

/** The playground's status line. */
function status(page) {
  return page.evaluate(() => {
    const s = document.querySelector('#pg-status');
    return { state: s.dataset.state, run: Number(s.dataset.run), items: Number(s.dataset.items),
      firstTokenMs: s.dataset.firstTokenMs === '' ? null : Number(s.dataset.firstTokenMs), text: s.textContent };
  });
}

/** Presses Run (or Ctrl+Enter in the grammar) and waits for the run to end. */
async function run(page, { keys = false, timeout = RUN_MS } = {}) {
  const before = (await status(page)).run;
  if (keys) await page.locator('#pg-grammar').press('Control+Enter');
  else await page.click('#pg-run');
  await unlessCrash(page, page.waitForFunction((n) => {
    const s = document.querySelector('#pg-status');
    return Number(s.dataset.run) > n && ['done', 'stopped', 'error'].includes(s.dataset.state);
  }, before, { timeout, polling: 100 }));
  return status(page);
}

/** Waits for the run a link started by itself (no click) to end; speeds it up first. */
async function ranByItself(page, timeout = RUN_MS) {
  await page.waitForFunction(() => Number(document.querySelector('#pg-status')?.dataset.run ?? 0) >= 1,
    null, { timeout });
  // The setup is folded on a phone that opened a link: the run keeps its pace there.
  if (await page.isVisible('#pg-speed')) await page.fill('#pg-speed', FASTEST);
  await unlessCrash(page, page.waitForFunction(
    () => ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
    null, { timeout, polling: 100 }));
  return status(page);
}

/** The results view's outputs that were drawn: text → count. Rows are token sequences,
 *  so two tokenizations of one text (y·es and yes) add up under that text. */
function drawn(page, scope = '#view-results') {
  return page.evaluate((scope) => {
    const out = {};
    for (const r of document.querySelectorAll(`${scope} .output-row`)) {
      const n = Number(r.dataset.count);
      if (n > 0) out[r.dataset.text] = (out[r.dataset.text] ?? 0) + n;
    }
    return out;
  }, scope);
}

/** lz-string's compressToEncodedURIComponent format without back-references: every UTF-16
 *  unit is written as a literal (code 0 + 8 bits, or code 1 + 16 bits), the code width
 *  growing as the decoder's dictionary does. lz-string, and the page, read it back as
 *  `text`; the tests use it to write links the page's own form would never produce. */
function lzLiteral(text) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-';
  const bits = [];
  const put = (value, n) => { for (let i = 0; i < n; i++) bits.push((value >> i) & 1); };
  const literal = (unit, width) => {
    put(unit > 255 ? 1 : 0, width);
    put(unit, unit > 255 ? 16 : 8);
  };
  const units = Array.from({ length: text.length }, (_, i) => text.charCodeAt(i));
  if (units.length === 0) {
    put(2, 2);
  } else {
    literal(units[0], 2);
    let width = 3;
    let enlargeIn = 4;
    const grow = () => {
      enlargeIn -= 1;
      if (enlargeIn === 0) {
        enlargeIn = 2 ** width;
        width += 1;
      }
    };
    for (const u of units.slice(1)) {
      literal(u, width);
      grow(); // the literal's own dictionary entry
      grow(); // the entry the decoder adds after each code
    }
    put(2, width);
  }
  while (bits.length % 6) bits.push(0);
  let out = '';
  for (let i = 0; i < bits.length; i += 6) out += alphabet[bits.slice(i, i + 6).reduce((a, b) => a * 2 + b, 0)];
  return out;
}

describe('playground (toy models)', () => {
  it('opens with the first-click example and no message', async () => {
    await step('default', async (page) => {
      await open(page);
      assert.equal(await page.inputValue('#pg-grammar'), '00000|1[01]{4}');
      assert.equal(await page.inputValue('#pg-model'), 'gsk');
      assert.equal(await page.locator('#pg-link-message').count(), 0);
      assert.equal(await page.getAttribute('#pg-kind-detected', 'data-kind'), 'regex');
      // Two lines say what the opening example shows.
      assert.match(await page.textContent('#pg-about'), /biased.*00000.*CARS/s);
      // Edited by hand, the grammar is no longer the one those lines describe; put back, it is.
      await page.fill('#pg-grammar', '(yes|no|maybe)');
      assert.equal(await page.getAttribute('#pg-about', 'data-edited'), 'true');
      assert.match(await page.textContent('#pg-about'), /Edited from the example .*this grammar\.$/);
      await page.fill('#pg-grammar', '00000|1[01]{4}');
      assert.match(await page.textContent('#pg-about'), /biased.*00000.*CARS/s);
      // Wide screen: the setup and the views side by side.
      await page.setViewportSize({ width: 1400, height: 900 });
      const side = await page.locator('.pg-side').boundingBox();
      const main = await page.locator('.pg-main').boundingBox();
      assert.ok(main.x >= side.x + side.width - 1, `side ${JSON.stringify(side)} main ${JSON.stringify(main)}`);
      await page.setViewportSize({ width: 700, height: 900 });
      const side2 = await page.locator('.pg-side').boundingBox();
      const main2 = await page.locator('.pg-main').boundingBox();
      assert.ok(main2.y >= side2.y + side2.height - 1, 'stacked on a narrow screen');
      await page.setViewportSize({ width: 1200, height: 900 });
    });
  });

  it('CARS draws its trie, the token view and the results', async () => {
    await step('cars', async (page) => {
      await open(page);
      await setForm(page, { method: 'cars', n: 30, seed: 3 });
      const s = await run(page, { keys: true });
      assert.equal(s.state, 'done', s.text);
      assert.ok(Number(await page.getAttribute('#view-token', 'data-steps')) > 0);
      assert.ok(await page.locator('#view-token .top-token').count() > 0);
      assert.ok(Number(await page.getAttribute('#view-trie', 'data-nodes')) > 1);
      assert.equal(await page.getAttribute('#view-trie', 'data-kind'), 'p_u');
      // G_sk's trap after 0000 is pruned: some node lost mass.
      const masses = await page.$$eval('#view-trie .trie-node', (ns) => ns.map((n) => Number(n.dataset.mass)));
      assert.ok(masses.some((m) => m < 1), `masses ${masses}`);
      assert.ok(await page.locator('#view-trie-accept').count() === 1);
      // Drawn as a tree: edges, the latest generation's path, p_ε beside the acceptance rate.
      assert.equal(await page.locator('#view-trie-svg').count(), 1);
      assert.ok(await page.locator('#view-trie .trie-edge').count() >= 1);
      assert.ok(await page.locator('#view-trie .trie-node.on-path').count() >= 1);
      assert.ok(await page.locator('#view-trie .trie-node .pruned-tok').count() >= 1, 'pruned continuations are marked');
      assert.equal(await page.locator('#view-trie-accept .line-p-eps').count(), 1);
      await page.locator('#view-trie').screenshot({ path: join(ARTIFACTS, 'view-trie-cars.png') });
      // The next-token view: a bar per top token, Z as a filled bar.
      assert.ok(await page.locator('#view-token-bars .top-token').count() > 0);
      await page.locator('#view-token').screenshot({ path: join(ARTIFACTS, 'view-token-cars.png') });
      assert.equal(await page.getAttribute('#view-results', 'data-samples'), '30');
      // Exact: every sample is in the language, and 00000 (P^L ≈ 3e-10) is never drawn.
      const d = await drawn(page);
      assert.equal(Object.values(d).reduce((a, c) => a + c, 0), 30);
      for (const text of Object.keys(d)) assert.match(text, /^(00000|1[01]{4})$/);
      assert.equal(d['00000'], undefined);
      assert.ok(await page.locator('#view-results-tv').count() === 1);
      // The regex's compile time and its tensorized size.
      const info = await page.textContent('#pg-compile-info');
      assert.match(info, /compiled in [0-9.]+ ms · tensorized: \d+ states, \d+ edges, \d+ bytes of B_f/, info);
      console.log(`# figure: ${info} (toy G_sk regex)`);
    });
  });

  it('auto is offered first and says which sampler it chose and why', async () => {
    await step('auto', async (page) => {
      assert.equal(await page.$eval('#pg-method option', (o) => o.value), 'auto');
      // The menu groups the samplers by family, each once, each with its plain line.
      const menu = await page.$$eval('#pg-method optgroup', (gs) => gs.map((g) => ({
        family: g.label, options: [...g.querySelectorAll('option')].map((o) => [o.value, o.title]) })));
      assert.deepEqual(menu.map((g) => g.family), ['Start here', 'Token masking (fast, biased)', 'Exact rejection',
        'MCMC (faithful as steps grow)', 'Weighted SMC (faithful with its weights)', 'Budget and HMM (regexes only)', 'No constraint']);
      const offered = menu.flatMap((g) => g.options);
      assert.equal(new Set(offered.map(([v]) => v)).size, 19, JSON.stringify(offered));
      assert.ok(offered.every(([, title]) => title.length > 10), JSON.stringify(offered));
      await setForm(page, { method: 'auto', n: 40, seed: 1 });
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      // On G_sk CARS is cheap: auto says so after its first 20 generations and stays exact.
      const said = await page.textContent('#pg-estimate');
      assert.match(said, /^auto: \d+ of the first 20 generations were valid; .* so exact sampling \(cars\) goes on$/, said);
      assert.ok(await page.isVisible('#pg-estimate'));
      assert.ok(await page.isVisible('#view-trie'));
    });
  });

  it('token masking shows Z and the masked tokens', async () => {
    await step('lcd', async (page) => {
      await setForm(page, { method: 'lcd', n: 5, seed: 1 });
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.ok(await page.locator('#view-token-z[data-z]').count() === 1);
      assert.equal(await page.locator('#view-token-z-bar').count(), 1);
    });
  });

  it('ASAp draws its trie of c̃', async () => {
    await step('asap', async (page) => {
      await setForm(page, { method: 'asap', n: 20, seed: 2, grammar: '00000|1[01]{4}' });
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.equal(await page.getAttribute('#view-trie', 'data-kind'), 'c̃');
      assert.ok(Number(await page.getAttribute('#view-trie', 'data-nodes')) > 1);
    });
  });

  it('MCMC shows the chain, its proposals and their verdicts', async () => {
    await step('mcmc', async (page) => {
      await setForm(page, { method: 'mcmc-uniform', n: 3, steps: 8, seed: 4 });
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.equal(await page.getAttribute('#view-mcmc', 'data-chains'), '3');
      assert.equal(await page.getAttribute('#view-mcmc', 'data-steps'), '8');
      assert.equal(await page.locator('#view-mcmc .mcmc-step').count(), 8);
      assert.ok(await page.locator('#view-mcmc-proposal[data-accepted]').count() === 1);
      // The walk: one dot per generation of the chain, the path through the states.
      assert.equal(await page.locator('#view-mcmc-walk .walk-proposal').count(), 8);
      assert.equal(await page.locator('#view-mcmc-walk .walk-path').count(), 1);
      assert.equal(await page.locator('#view-mcmc-accept .line-rate').count(), 1);
      // The chains' law against the exact P^L, step by step (G_sk's language is finite).
      await page.waitForSelector('#view-mcmc-tv', { timeout: 15000 });
      const first = Number(await page.getAttribute('#view-mcmc-tv', 'data-first'));
      const last = Number(await page.getAttribute('#view-mcmc-tv', 'data-last'));
      assert.ok(first >= 0 && first <= 1 && last >= 0 && last <= 1, `TV ${first} → ${last}`);
      assert.equal(await page.locator('#view-mcmc-tv-chart polyline').count(), 1);
      await page.locator('#view-mcmc').screenshot({ path: join(ARTIFACTS, 'view-mcmc.png') });
    });
  });

  it('SMC shows particles, weights, ESS and resampling lineage', async () => {
    await step('smc', async (page) => {
      // The random toy model over a, b, c: weights differ, so the ESS falls and SMC resamples.
      await setForm(page, { example: 'toy-random', method: 'awrs-smc', n: 2, particles: 8, seed: 5 });
      await page.fill('#pg-ess', '0.99');
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.equal(await page.getAttribute('#view-smc', 'data-particles'), '8');
      assert.equal(await page.locator('#view-smc .particle').count(), 8);
      assert.ok(await page.locator('#view-smc-ess[data-ess]').count() === 1);
      const resamplings = Number(await page.getAttribute('#view-smc', 'data-resamplings'));
      if (resamplings > 0) assert.ok(await page.locator('#view-smc-lineage line').count() >= 8);
      // The lanes: a dot per particle and step, shaded by weight.
      const columns = Number(await page.getAttribute('#view-smc-lanes', 'data-columns'));
      assert.ok(columns >= 1, `lanes: ${columns} columns`);
      assert.equal(await page.locator('#view-smc-lanes .lane-cell').count(), 8 * columns);
      const cellWeights = await page.$$eval('#view-smc-lanes .lane-cell', (cs) => cs.map((c) => Number(c.dataset.weight)));
      assert.ok(cellWeights.every((w) => w >= 0 && w <= 1 + 1e-9), String(cellWeights));
      const weights = await page.$$eval('#view-smc .particle', (ps) => ps.map((p) => Number(p.dataset.weight)));
      assert.ok(Math.abs(weights.reduce((a, c) => a + c, 0) - 1) < 1e-6, `weights ${weights}`);
      // ESS / M plotted against the threshold τ = 0.99 (dashed).
      assert.equal(await page.locator('#view-smc-ess-line .line-ess').count(), 1);
      assert.equal(await page.locator('#view-smc-ess-line .chart-threshold').count(), 1);
      await page.locator('#view-smc').screenshot({ path: join(ARTIFACTS, 'view-smc.png') });
      // Frames while the lanes redraw at 128 events/s (16 particles): a figure, not a test.
      await setForm(page, { example: 'toy-random', method: 'awrs-smc', n: 200, particles: 16, seed: 6, speed: '6' });
      await page.click('#pg-run');
      const fps = await framesPerSecond(page, 2000);
      const lanes = Number(await page.getAttribute('#view-smc-lanes', 'data-columns'));
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state !== 'running');
      console.log(`# figure: ${fps.toFixed(1)} animation frames per second while SMC's lanes (16 particles, ${lanes} columns) redraw at 128 events/s`);
    });
  });

  it('P-GCD runs on a regex (HMM × automaton guide) and refuses a grammar with a message', async () => {
    await step('p-gcd', async (page) => {
      await setForm(page, { example: 'toy-random', method: 'p-gcd-smc', n: 2, particles: 4, seed: 5 });
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.equal(await page.getAttribute('#view-smc', 'data-particles'), '4');
      assert.equal(await page.locator('#view-smc .particle').count(), 4);
      const d = await drawn(page);
      assert.ok(Object.keys(d).length > 0, JSON.stringify(d));
      for (const text of Object.keys(d)) assert.match(text, /^(ab|ba|aab|cc?)$/);
      // The distillation's progress: every EM iteration reported, with its log-likelihood.
      assert.equal(await page.getAttribute('#view-hmm-progress', 'value'), await page.getAttribute('#view-hmm-progress', 'max'));
      assert.equal(await page.locator('#view-hmm-ll .xy-line').count(), 1);
      assert.match(await page.getAttribute('#view-hmm', 'data-engine'), /^(cpu|burn-flex-f64)$/);
      await page.locator('#view-smc').screenshot({ path: join(ARTIFACTS, 'view-p-gcd.png') });
      // The guide in the token view: P and q per token, the guide's share of Z per step.
      const share = Number(await page.getAttribute('#view-token-guide', 'data-guide-mass'));
      assert.ok(share > 0 && share <= 1 + 1e-9, `guide mass ${share}`);
      const qs = await page.$$eval('#view-token-guide .guide-token', (rows) => rows.map((r) => Number(r.dataset.q)));
      assert.ok(qs.length > 0 && qs.reduce((a, b) => a + b, 0) <= 1 + 1e-9, String(qs));
      assert.equal(await page.locator('#view-token-guide-mass .line-guide').count(), 1);
      await page.locator('#view-token').screenshot({ path: join(ARTIFACTS, 'view-p-gcd-guide.png') });
      // A context-free grammar has no tensorized automaton for the guide: the option is
      // off, and a run that asks for it anyway (a link) ends with the message.
      await setForm(page, { grammar: 'root ::= "ab" | "ba"', kind: 'gbnf' });
      assert.equal(await page.$eval('#pg-method option[value="p-gcd-smc"]', (o) => o.disabled), true);
      assert.equal(await page.$eval('#pg-method option[value="awrs-smc"]', (o) => o.disabled), false);
      const e = await run(page);
      assert.equal(e.state, 'error', e.text);
      assert.match(e.text, /needs a regular constraint/, e.text);
    });
  });

  it('switching toy models recompiles the grammar for the new vocabulary', async () => {
    await step('toy-switch', async (page) => {
      await open(page);
      // G_sk and a random model with two letters both have three tokens ('0' '1' EOS and
      // 'a' 'b' EOS): the grammar must still be compiled for the letters.
      await setForm(page, { grammar: 'ab|ba|b', method: 'cars', n: 10, seed: 2 });
      assert.equal((await run(page)).state, 'error');
      await page.selectOption('#pg-model', 'random');
      await page.fill('#pg-toy-vocab', '2');
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      for (const text of Object.keys(await drawn(page))) assert.match(text, /^(ab|ba|b)$/);
    });
  });

  it('a permalink reproduces the same samples', async () => {
    await step('permalink', async (page) => {
      await open(page);
      await setForm(page, { method: 'ars', n: 25, seed: 11, maxTokens: 7 });
      assert.equal((await run(page)).state, 'done');
      const first = await drawn(page);
      await page.click('#pg-copy-link');
      const link = await page.inputValue('#pg-link');
      assert.match(link, /#v=1&s=/);
      assert.equal(await page.locator('#pg-link-qr svg').count(), 1, 'the link as a QR code too');
      await open(page, link);
      assert.equal(await page.inputValue('#pg-method'), 'ars');
      assert.equal(await page.inputValue('#pg-seed'), '11');
      assert.equal(await page.inputValue('#pg-max-tokens'), '7');
      // The link runs by itself, as one click on Run would.
      assert.equal((await ranByItself(page)).state, 'done');
      assert.deepEqual(await drawn(page), first);
      // A different seed gives different samples (the comparison can fail).
      await page.fill('#pg-seed', '12');
      await run(page);
      assert.notDeepEqual(await drawn(page), first);
    });
  });

  it('a shared link lands on its experiment and runs it: in view at 1280×720 and at 390 px, the same samples', async () => {
    await step('landing', async (page) => {
      await open(page);
      await setForm(page, { method: 'mcmc-restart', n: 30, steps: 4, seed: 7, compare: false });
      assert.equal((await run(page)).state, 'done');
      const first = await drawn(page);
      await page.click('#pg-copy-link');
      const link = await page.inputValue('#pg-link');
      for (const viewport of [{ width: 1280, height: 720 }, { width: 390, height: 844 }]) {
        // A second browser, as the recipient's, folded details and all.
        const other = await launch({ webgpu: false, openDetails: false, viewport });
        try {
          await other.page.goto(link);
          await other.page.waitForFunction(() => Number(document.querySelector('#pg-status')?.dataset.run ?? 0) >= 1,
            null, { timeout: RUN_MS });
          const focused = await other.page.evaluate(() => document.activeElement.classList.contains('stage'));
          const s = await ranByItself(other.page);
          assert.equal(s.state, 'done', s.text);
          assert.deepEqual(await drawn(other.page), first, `the sender's samples at ${viewport.width} px`);
          const box = await other.page.evaluate(() => {
            const r = (q) => document.querySelector(q).getBoundingClientRect();
            return { stage: r('.stage').top, results: r('#view-results').top, lessons: r('#lessons').height,
              run: r('#stage-run').top };
          });
          const inView = (y) => y >= 0 && y < viewport.height;
          assert.ok(inView(box.stage) && inView(box.results) && inView(box.run), `${viewport.width} px: ${JSON.stringify(box)}`);
          assert.ok(box.lessons < 48, `the lesson list folds to a line (${box.lessons} px)`);
          assert.ok(focused, 'the keyboard focus is on the stage');
          await other.page.screenshot({ path: join(ARTIFACTS, `playground-landing-${viewport.width}.png`) });
        } finally {
          await other.close();
        }
      }
      // A pasted link previews: Open Graph and Twitter card tags, and their 1200×630 picture.
      const meta = await page.$$eval('meta[property^="og:"], meta[name^="twitter:"]',
        (ms) => Object.fromEntries(ms.map((m) => [m.getAttribute('property') ?? m.getAttribute('name'), m.content])));
      for (const k of ['og:title', 'og:description', 'og:image', 'twitter:card', 'twitter:image']) assert.ok(meta[k], k);
      const png = await page.request.get(new URL(meta['og:image'], page.url()).href);
      const bytes = await png.body();
      assert.equal(png.status(), 200);
      assert.deepEqual([bytes.readUInt32BE(16), bytes.readUInt32BE(20)], [1200, 630], 'the preview picture is 1200×630');
    });
  });

  it('compare mode shows lcd biased and cars exact on G_sk', async () => {
    await step('compare', async (page) => {
      await open(page, new URL('#example=toy-gsk', BASE_URL).href);
      assert.equal(await page.isChecked('#pg-compare-mode'), true);
      await page.fill('#pg-budget', '3000');
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      const col = (m) => page.evaluate((m) => {
        const c = document.querySelector(`.compare-col[data-method="${m}"]`);
        const rows = Object.fromEntries([...c.querySelectorAll('.output-row')].map((r) =>
          [r.dataset.text, { count: Number(r.dataset.count), emp: Number(r.dataset.empirical), exact: Number(r.dataset.exact) }]));
        return { tv: Number(c.dataset.tv), calls: Number(c.dataset.lmCalls), samples: Number(c.dataset.samples), rows };
      }, m);
      const lcd = await col('lcd');
      const cars = await col('cars');
      // Equal budgets.
      assert.equal(lcd.calls, 3000);
      assert.equal(cars.calls, 3000);
      // The exact distribution is shown: 00000 has P^L ≈ 3.4e-10, 11111 the most.
      assert.ok(lcd.rows['00000'].exact < 1e-8);
      assert.ok(Math.abs(lcd.rows['11111'].exact - 0.0916) < 0.002, JSON.stringify(lcd.rows['11111']));
      // lcd writes 00000 about 45% of the time (500 samples: sd ≈ 0.022).
      assert.ok(lcd.rows['00000'].emp > 0.33, `lcd 00000 share ${lcd.rows['00000'].emp}`);
      assert.ok(lcd.tv > 0.3, `lcd TV ${lcd.tv}`);
      // cars never writes it and lands near the exact distribution.
      assert.equal(cars.rows['00000'].count, 0);
      assert.ok(cars.samples > 500);
      assert.ok(cars.tv < 0.1, `cars TV ${cars.tv}`);
      // KL against LM calls, one line per sampler, on shared axes.
      const lines = await page.$$eval('#compare-kl .xy-line', (ls) => ls.map((l) => l.dataset.label));
      assert.deepEqual(lines.sort(), ['cars', 'lcd']);
      await page.locator('#compare').screenshot({ path: join(ARTIFACTS, 'view-compare.png') });
      // The compare setup, budget included, travels in a link and reproduces.
      await page.click('#pg-copy-link');
      await open(page, await page.inputValue('#pg-link'));
      assert.equal(await page.isChecked('#pg-compare-mode'), true);
      assert.equal(await page.inputValue('#pg-budget'), '3000');
      await page.fill('#pg-speed', FASTEST);
      assert.equal((await run(page)).state, 'done');
      assert.deepEqual(await drawn(page, '.compare-col[data-method="lcd"]'),
        Object.fromEntries(Object.entries(lcd.rows).filter(([, r]) => r.count > 0).map(([t, r]) => [t, r.count])));
    });
  });

  it('Step shows one event at a time, Stop ends a run mid-way, and frames keep coming', async () => {
    await step('step-stop', async (page) => {
      await open(page);
      await setForm(page, { method: 'cars', n: 200, seed: 1, speed: '0' });
      await page.click('#pg-step');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.items === '1');
      await page.click('#pg-step');
      await page.click('#pg-step');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.items === '3');
      assert.equal((await status(page)).state, 'paused');
      // Play at 128 events/s and count animation frames for two seconds.
      await page.fill('#pg-speed', '6');
      await page.click('#pg-run');
      const fps = await framesPerSecond(page, 2000);
      const mid = await status(page);
      assert.equal(mid.state, 'running');
      assert.ok(mid.items > 3);
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state === 'stopped');
      const stopped = await status(page);
      // The player shows events on animation frames: 30 more frames and none may appear.
      await animationFrames(page, 30);
      const later = await status(page);
      assert.equal(later.items, stopped.items, 'no event is shown after Stop');
      assert.ok(Number(await page.getAttribute('#view-results', 'data-samples')) < 200);
      console.log(`# figure: ${fps.toFixed(1)} animation frames per second during a toy run at 128 events/s`);
    });
  });

  it('grammar errors are marked at their line and column', async () => {
    await step('grammar-error', async (page) => {
      await open(page);
      await setForm(page, { grammar: '00000|1[01{4}' });
      let s = await run(page);
      assert.equal(s.state, 'error');
      assert.equal(await page.getAttribute('#pg-grammar-error', 'data-line'), '1');
      assert.ok(Number(await page.getAttribute('#pg-grammar-error', 'data-column')) > 0);
      assert.equal(await page.locator('.gutter .ln.err').textContent(), '1');
      // A GBNF grammar whose third line names an undefined rule.
      await setForm(page, { grammar: 'root ::= a | b\na ::= "00000"\nb ::= "1" c\n', kind: 'gbnf' });
      s = await run(page);
      assert.equal(s.state, 'error');
      assert.equal(await page.getAttribute('#pg-grammar-error', 'data-line'), '3');
      assert.equal(await page.locator('.gutter .ln.err').textContent(), '3');
      // The error's link selects the place in the editor.
      await page.click('#pg-grammar-error button');
      const caret = await page.$eval('#pg-grammar', (t) => t.selectionStart);
      assert.ok(caret >= 'root ::= a | b\na ::= "00000"\n'.length, `caret at ${caret}`);
      // Fixing it clears the mark (G_sk as GBNF).
      await setForm(page, { grammar: 'root ::= a | b\na ::= "00000"\nb ::= "1" d d d d\nd ::= "0" | "1"\n', method: 'cars', n: 3 });
      s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.equal(await page.locator('#pg-grammar-error').count(), 0);
      assert.match(await page.textContent('#pg-compile-info'), /compiled in [0-9.]+ ms \(llguidance\)/);
    });
  });

  it('hostile or broken permalinks open the default state with a message', async () => {
    await step('hostile-links', async (page) => {
      // Script in a string is data: build such a link with the page itself.
      await open(page);
      await page.evaluate(() => { window.__pwned = false; });
      const evil = '<img src=x onerror="window.__pwned=true">';
      await setForm(page, { grammar: evil });
      await page.click('#pg-copy-link');
      const evilLink = await page.inputValue('#pg-link');
      await open(page, evilLink);
      assert.equal(await page.inputValue('#pg-grammar'), evil);
      assert.equal(await page.evaluate(() => window.__pwned), undefined);
      assert.equal(await page.locator('img[src=x]').count(), 0);

      const bad = [
        '#v=1&s=%%%not-lz%%%',
        '#v=99&s=N4Ig',
        `#v=1&s=${'A'.repeat(200_000)}`,
        '#v=1&s=',
        '#example=no-such-example',
        '#v=1&s=<script>alert(1)</script>',
      ];
      const refused = async (h, why = /./) => {
        await open(page, new URL(h, BASE_URL).href);
        const msg = await page.locator('#pg-link-message').textContent();
        assert.match(msg, /could not be opened.*default example/, `for ${h.slice(0, 40)}: ${msg}`);
        assert.match(msg, why, `for ${h.slice(0, 40)}: ${msg}`);
        assert.ok(msg.length < 400, msg);
        assert.equal(await page.inputValue('#pg-grammar'), '00000|1[01]{4}');
        assert.equal(await page.inputValue('#pg-method'), 'cars');
        assert.deepEqual(page.straitErrors, []);
      };
      for (const h of bad) await refused(h);

      // Well-formed lz-string whose JSON has the wrong types. First, the same encoding of
      // right types opens without a message (so the refusals below are about the types,
      // not the encoding).
      await open(page, new URL(`#v=1&s=${lzLiteral('{"n":7,"seed":3,"compare":[]}')}`, BASE_URL).href);
      assert.equal(await page.locator('#pg-link-message').count(), 0);
      assert.equal(await page.inputValue('#pg-n'), '7');
      assert.equal(await page.inputValue('#pg-seed'), '3');
      for (const json of ['{"n":"ten"}', '{"grammar":5}', '{"seed":1.5}', '{"model":{"gpu":1}}', '{"compare":"lcd"}']) {
        await refused(`#v=1&s=${lzLiteral(json)}`, /wrong type/);
      }
      // The default state runs.
      await page.fill('#pg-speed', FASTEST);
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
    });
  });

  it('a language too large to enumerate says so and the run goes on', async () => {
    await step('exact-too-large', async (page) => {
      // 3^8 = 6561 strings over the random toy model's a, b, c: above the toy limit of
      // 5,000 sequences, refused within a few thousand model calls.
      const state = { grammar: '[abc]{8}', grammar_kind: 'regex', model: { toy: { random: { seed: 7, vocab: 3 } } },
        method: 'lcd', n: 5, max_tokens: 10, seed: 2, compare: [], example: null };
      await open(page, new URL(`#v=1&s=${lzLiteral(JSON.stringify(state))}`, BASE_URL).href);
      assert.equal(await page.locator('#pg-link-message').count(), 0);
      assert.equal(await page.inputValue('#pg-grammar'), '[abc]{8}');
      await page.fill('#pg-speed', FASTEST);
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      const note = await page.textContent('#view-results-exact-note');
      assert.match(note, /more than 5000 token sequences; too large to enumerate/, note);
      assert.equal(await page.locator('#view-results-tv').count(), 0);
      for (const text of Object.keys(await drawn(page))) assert.match(text, /^[abc]{8}$/);
      assert.deepEqual(page.straitErrors, []);
    });
  });

  it('exports samples and events as JSON lines', async () => {
    await step('export', async (page) => {
      await open(page);
      await setForm(page, { method: 'cars', n: 12, seed: 9 });
      assert.equal((await run(page)).state, 'done');
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#pg-export-samples')]);
      const lines = readFileSync(await dl.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(lines.length, 12);
      for (const l of lines) {
        assert.match(l.text, /^(00000|1[01]{4})$/);
        assert.equal(l.valid, true);
        assert.ok(l.lm_calls > 0);
      }
      const [dl2] = await Promise.all([page.waitForEvent('download'), page.click('#pg-export-events')]);
      const events = readFileSync(await dl2.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(events.filter((e) => e.type === 'sample_finished').length, 12);
      assert.ok(events.some((e) => e.type === 'token'));
      assert.equal(Number(await page.getAttribute('#pg-status', 'data-items')), events.length);
    });
  });

  it('time from Run to the first token in toy mode', async () => {
    await step('first-token-toy', async (page) => {
      await open(page);
      await setForm(page, { method: 'lcd', n: 50, speed: '7' });
      await page.click('#pg-run');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.firstTokenMs !== '');
      const s = await status(page);
      console.log(`# figure: ${s.firstTokenMs} ms from Run to the first token shown (toy G_sk, lcd)`);
      await page.keyboard.press('Escape');
    });
  });
});

describe('the published site without WebGPU', () => {
  let site;
  before(async () => {
    site = await servePlain(DIST);
  });
  after(() => site?.close());

  it('toy mode, the real model on the CPU (one sequence shared by the workers, isolated by the site\'s service worker) and its exact P^L, served by a plain static server under a sub-path, in a Chromium without WebGPU', async () => {
    await withPage('playground-no-webgpu', { webgpu: false, extraArgs: ['--disable-features=WebGPU,Vulkan'] }, async (page) => {
      // No COOP/COEP headers, a path below the root: as a GitHub Pages project site.
      await page.goto(site.url);
      // Toy mode needs neither WebGPU nor the model: it runs before the model is in.
      await page.fill('#pg-speed', FASTEST);
      const s = await run(page);
      assert.equal(s.state, 'done', s.text);
      assert.ok(Number(await page.getAttribute('.compare-col[data-method="cars"]', 'data-samples')) > 0);
      await page.screenshot({ path: join(ARTIFACTS, 'playground-no-webgpu.png'), fullPage: true });
      // A toy lesson, opened from the lesson list: its link stays under the sub-path.
      await page.click('#lessons a[href="#lesson=rejection-cars"]');
      await page.waitForFunction(() => document.querySelector('#lesson')?.dataset.lesson === 'rejection-cars'
        && document.querySelector('#pg-status').dataset.state === 'done', null, { timeout: RUN_MS });
      assert.ok(page.url().startsWith(site.url), `${page.url()} is under ${site.url}`);
      assert.ok(Number(await page.getAttribute('#view-results', 'data-samples')) > 0, 'the lesson step ran');
      // The real model loads on the CPU path.
      await waitForPhase(page, ['ready'], LOAD_MS);
      assert.equal(await page.getAttribute('#backend-info', 'data-backend'), 'cpu');
      // Without the server's COOP/COEP, the site's service worker made the page
      // cross-origin isolated (one reload), so the pool got its split buffer.
      assert.equal(await page.evaluate(() => self.crossOriginIsolated), true);
      await page.waitForFunction(() => {
        const w = document.querySelector('#pg-worker')?.dataset;
        return w?.state === 'ready' && Number(w.workers) >= Number(w.planned);
      }, null, { timeout: LOAD_MS, polling: 250 });
      assert.notEqual(await page.getAttribute('#pg-worker', 'data-split'), 'off');
      await setForm(page, {
        model: 'real', grammar: '(yes|no|maybe)', kind: 'regex', method: 'lcd', n: 1, maxTokens: 6,
        prompt: 'Is the sky blue on a clear day? Answer yes, no or maybe.', speed: FASTEST,
      });
      // The prompt settled in the form is prefilled while the pool is idle: the count
      // below is the run's own.
      await prefillDone(page);
      const splitBefore = Number(await page.getAttribute('#pg-worker', 'data-split'));
      const r = await run(page, { timeout: REAL_RUN_MS });
      assert.equal(r.state, 'done', r.text);
      for (const text of Object.keys(await drawn(page))) assert.match(text, /^(yes|no|maybe)$/);
      // With two workers or more, the idle one computed some of the run's products.
      if (Number(await page.getAttribute('#pg-worker', 'data-workers')) > 1) {
        await page.waitForFunction((n) => Number(document.querySelector('#pg-worker').dataset.split) > n,
          splitBefore, { timeout: 10_000, polling: 250 });
      }
      await page.click('#pg-exact');
      await unlessCrash(page, page.waitForFunction(
        () => ['done', 'error'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: REAL_RUN_MS, polling: 250 }));
      const e = await status(page);
      assert.equal(e.state, 'done', e.text);
      const exact = await page.$$eval('#view-results .output-row', (rs) => rs.map((r) => [r.dataset.text, Number(r.dataset.exact)]));
      assert.ok(exact.length > 0, 'the exact P^L is shown');
      for (const [text] of exact) assert.match(text, /^(yes|no|maybe)$/);
    });
  });
});

describe('playground (SmolLM2)', () => {
  it('the same views with the real model', async () => {
    await step('real', async (page) => {
      await open(page);
      await waitForPhase(page, ['ready'], LOAD_MS);
      // Real-model runs go to the sampling worker once it has its copy of the model.
      await page.waitForFunction(() => document.querySelector('#pg-worker')?.dataset.state === 'ready',
        null, { timeout: LOAD_MS });
      await setForm(page, {
        model: 'real', grammar: '(yes|no|maybe)', kind: 'regex', method: 'lcd', n: 1, maxTokens: 4,
        prompt: 'Is the sky blue on a clear day? Answer yes, no or maybe.', speed: FASTEST,
      });
      await page.click('#pg-run');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.firstTokenMs !== '',
        null, { timeout: REAL_RUN_MS });
      const first = (await status(page)).firstTokenMs;
      await unlessCrash(page, page.waitForFunction(
        () => ['done', 'stopped', 'error'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: REAL_RUN_MS, polling: 250 }));
      const s = await status(page);
      assert.equal(s.state, 'done', s.text);
      assert.ok(Number(await page.getAttribute('#view-token', 'data-steps')) > 0);
      assert.ok(await page.locator('#view-token .top-token[data-allowed="false"]').count() > 0,
        'the real vocabulary has masked top tokens');
      const d = await drawn(page);
      assert.equal(Object.values(d).reduce((a, c) => a + c, 0), 1);
      for (const text of Object.keys(d)) assert.match(text, /^(yes|no|maybe)$/);
      assert.ok(await page.locator('#view-results-exact-note').count() === 1);
      console.log(`# figure: ${first} ms from Run to the first token shown (SmolLM2 on ${await page.textContent('#backend-info')})`);

      // The worker line reads the pool four times a second: wait for a read after the run.
      await page.waitForFunction(() => Number(document.querySelector('#pg-worker').dataset.messages) > 0,
        null, { timeout: 5_000, polling: 50 }).catch(() => {});
      assert.ok(Number(await page.getAttribute('#pg-worker', 'data-messages')) > 0, 'the run went to the worker');

      // Frames during a real-model run (the forward pass runs in the sampling worker).
      await page.fill('#pg-max-tokens', '32');
      await page.fill('#pg-grammar', '[a-z ]{1,31}');
      await page.click('#pg-run');
      const fps = await framesPerSecond(page, 3000);
      const shown = (await status(page)).items;
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => ['stopped', 'done'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: REAL_RUN_MS });
      console.log(`# figure: ${fps.toFixed(1)} animation frames per second during a SmolLM2 run (CPU wasm in the sampling worker; ${shown} events in 3 s)`);

      // The exact P^L with the real model, by enumeration.
      // Every tokenization counts: m·a·y·b·e·EOS needs 6 tokens.
      await page.fill('#pg-grammar', '(yes|no|maybe)');
      await page.fill('#pg-max-tokens', '6');
      const t0 = Date.now();
      await page.click('#pg-exact');
      // Its progress: model calls so far, against the cap.
      await page.waitForFunction(() => Number(document.querySelector('#pg-exact-progress')?.dataset.lmCalls) > 0,
        null, { timeout: REAL_RUN_MS, polling: 100 });
      await unlessCrash(page, page.waitForFunction(
        () => ['done', 'error'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: REAL_RUN_MS, polling: 250 }));
      const e = await status(page);
      assert.equal(e.state, 'done', e.text);
      assert.equal(await page.locator('#pg-exact-progress').count(), 0, 'the progress bar goes when it ends');
      console.log(`# figure: exact P^L with SmolLM2 in ${Date.now() - t0} ms: ${e.text}`);
      const exact = await page.$$eval('#view-results .output-row', (rs) => rs.map((r) => [r.dataset.text, Number(r.dataset.exact)]));
      const total = exact.reduce((a, [, p]) => a + p, 0);
      assert.ok(Math.abs(total - 1) < 1e-6 || exact.length >= 24, `exact sums to ${total}`);
      for (const [text] of exact) assert.match(text, /^(yes|no|maybe)$/);
      // A run of the same setup shows it beside the samples, with TV.
      const r = await run(page, { timeout: REAL_RUN_MS });
      assert.equal(r.state, 'done', r.text);
      assert.equal(await page.locator('#view-results-tv').count(), 1);
    });
  });

  it('CARS with the real model, then the model loaded from disk', async () => {
    await step('real-cars-disk', async (page) => {
      await setForm(page, { method: 'cars', n: 2, maxTokens: 4 });
      let s = await run(page, { timeout: REAL_RUN_MS });
      assert.equal(s.state, 'done', s.text);
      assert.ok(Number(await page.getAttribute('#view-trie', 'data-nodes')) > 0);
      const d = await drawn(page);
      assert.equal(Object.values(d).reduce((a, c) => a + c, 0), 2);
      for (const text of Object.keys(d)) assert.match(text, /^(yes|no|maybe)$/);

      await page.setInputFiles('#model-file', MODEL_FILE);
      await page.waitForFunction(() => document.querySelector('#model-info')?.textContent.includes('from disk'),
        null, { timeout: 60_000 });
      await waitForPhase(page, ['ready'], LOAD_MS);
      await setForm(page, { method: 'lcd', n: 1 });
      s = await run(page, { timeout: REAL_RUN_MS });
      assert.equal(s.state, 'done', s.text);
      for (const text of Object.keys(await drawn(page))) assert.match(text, /^(yes|no|maybe)$/);
    });
  });

  it('MCMC, SMC and ASAp views with the real model (tiny budgets)', async () => {
    await step('real-views', async (page) => {
      // The CPU wasm model decodes about 3 tokens/s: one chain of 2 steps, one SMC run of
      // 2 particles (and one of P-GCD, whose HMM is fitted to 16 sequences of 4 tokens), 2
      // ASAp samples, at most 4 tokens each (yes, no and maybe are one token
      // each after the chat template; SMC's budget mask keeps its particles in the language).
      await setForm(page, {
        grammar: '(yes|no|maybe)', kind: 'regex', prompt: 'Is the sky blue on a clear day? Answer yes, no or maybe.',
        maxTokens: 4, steps: 2, particles: 2, seed: 1,
      });
      const cases = [
        { method: 'mcmc-uniform', n: 1, view: '#view-mcmc', check: async () => {
          assert.equal(await page.getAttribute('#view-mcmc', 'data-chains'), '1');
          assert.equal(await page.getAttribute('#view-mcmc', 'data-steps'), '2');
          assert.equal(await page.locator('#view-mcmc .mcmc-step').count(), 2);
          assert.equal(await page.locator('#view-mcmc-proposal[data-accepted]').count(), 1);
        } },
        { method: 'awrs-smc', n: 1, view: '#view-smc', check: async () => {
          assert.equal(await page.getAttribute('#view-smc', 'data-particles'), '2');
          assert.equal(await page.locator('#view-smc .particle').count(), 2);
          assert.equal(await page.locator('#view-smc-ess[data-ess]').count(), 1);
          const weights = await page.$$eval('#view-smc .particle', (ps) => ps.map((p) => Number(p.dataset.weight)));
          assert.ok(Math.abs(weights.reduce((a, c) => a + c, 0) - 1) < 1e-6, `weights ${weights}`);
        } },
        { method: 'p-gcd-smc', n: 1, view: '#view-smc', check: async () => {
          // The worker distils the HMM with burn's CPU backend (hmm-burn, issue 17).
          assert.equal(await page.getAttribute('#view-hmm', 'data-engine'), 'burn-flex-f64');
          assert.equal(await page.getAttribute('#view-hmm-progress', 'value'), await page.getAttribute('#view-hmm-progress', 'max'));
          assert.equal(await page.getAttribute('#view-smc', 'data-particles'), '2');
        } },
        { method: 'asap', n: 2, view: '#view-trie', check: async () => {
          assert.equal(await page.getAttribute('#view-trie', 'data-kind'), 'c̃');
          assert.ok(Number(await page.getAttribute('#view-trie', 'data-nodes')) > 0);
          assert.ok(await page.locator('#view-trie .trie-node').count() > 0);
        } },
      ];
      for (const c of cases) {
        await setForm(page, { method: c.method, n: c.n });
        const s = await run(page, { timeout: REAL_RUN_MS });
        assert.equal(s.state, 'done', `${c.method}: ${s.text}`);
        assert.equal(await page.getAttribute('.views', 'data-method'), c.method);
        assert.equal(await page.locator(c.view).count(), 1, `${c.method} shows ${c.view}`);
        assert.ok((await page.textContent(c.view)).trim().length > 0, `${c.view} is empty`);
        await c.check();
        const d = await drawn(page);
        assert.ok(Object.keys(d).length > 0, `${c.method} drew nothing`);
        assert.equal(Object.values(d).reduce((a, k) => a + k, 0),
          Number(await page.getAttribute('#view-results', 'data-samples')));
        for (const text of Object.keys(d)) assert.match(text, /^(yes|no|maybe)$/, c.method);
        console.log(`# figure: ${c.method} on SmolLM2: ${s.text}`);
        await page.screenshot({ path: join(ARTIFACTS, `playground-real-${c.method}.png`), fullPage: true });
      }
    });
  });
  it("a figure of the papers' tables opens its cell in the playground, in view, and runs it", async () => {
    await step('papers', async (page) => {
      await open(page);
      await waitForPhase(page, ['ready'], LOAD_MS);
      const papers = page.locator('#papers');
      if (!(await papers.evaluate((d) => d.open))) await page.click('#papers > summary');
      const tables = await page.locator('#papers .paper-table').count();
      assert.ok(tables >= 5, `the three plans' tables are drawn (${tables})`);
      const cell = page.locator('#papers a.paper-cell').first();
      const row = await cell.evaluate((a) => a.closest('tr').querySelector('th').textContent);
      const href = await cell.getAttribute('href');
      await cell.click();
      await page.waitForFunction(() => ['running', 'done'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: REAL_RUN_MS });
      assert.equal(await page.evaluate(() => location.hash), href, 'the address holds the cell');
      assert.equal(await page.inputValue('#pg-method'), row, 'the sampler of its row');
      assert.equal(await page.inputValue('#pg-model'), 'real');
      const top = await page.$eval('#playground', (e) => e.getBoundingClientRect().top);
      assert.ok(top >= -1 && top < 100, `the playground is in view (top at ${top})`);
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => ['stopped', 'done'].includes(document.querySelector('#pg-status').dataset.state),
        null, { timeout: REAL_RUN_MS });
    });
  });
  it('a link naming a model on another origin asks first, fetches nothing before the answer, and "no" loads the page\'s own', async () => {
    await step('model-ask', async (page) => {
      // The same server under another name is another origin to the browser.
      const here = new URL(BASE_URL);
      const otherHost = here.hostname === 'localhost' ? '127.0.0.1' : 'localhost';
      const foreign = `${here.protocol}//${otherHost}:${here.port}/models/SmolLM2-135M-Instruct.Q4_1.gguf`;
      const asked = [];
      const log = (r) => { if (new URL(r.url()).hostname === otherHost) asked.push(`${r.method()} ${r.url()}`); };
      page.on('request', log);
      try {
        await page.goto('about:blank');
        await page.goto(`${BASE_URL}?model=${encodeURIComponent(foreign)}`);
        await waitForPhase(page, ['asking'], LOAD_MS);
        assert.equal(await page.textContent('#model-ask-origin'), `${here.protocol}//${otherHost}:${here.port}`);
        await page.waitForTimeout(1000);
        assert.ok(asked.every((r) => r.startsWith('HEAD ')), `only the size was asked for: ${asked}`);
        console.log(`# the question: ${(await page.textContent('#model-ask-text')).trim()}`);
        await page.click('#model-ask-no');
        await waitForPhase(page, ['ready'], LOAD_MS);
        assert.ok(asked.every((r) => r.startsWith('HEAD ')), `nothing downloaded from the other origin: ${asked}`);
      } finally {
        page.off('request', log);
      }
    });
  });
});
