// The lessons, presentation mode, embedding, the views' SVG and PNG downloads, and
// accessibility, seen as a newcomer sees the page (engineering details folded):
// - every lesson step, walked with Next and the arrow keys in presentation mode at
//   1280×720, runs by itself, highlights the view it names, and fits: no horizontal
//   scrolling of the page, no figure drawn outside its panel (checked too outside
//   presentation mode, embedded, and at 390 px). A screenshot of each step is left in
//   e2e/artifacts/lessons/<lesson>-<step>.png;
// - the playground at 390 px wide (a phone) fits the same way (playground-390.png);
// - a deep link opens its step, a link to no lesson says so, `?embed=1` shows only the
//   stage and its Run button;
// - each view downloads as SVG and as PNG;
// - axe-core finds no violation of impact "serious" or "critical" on the playground, a
//   lesson and presentation mode;
// - the real-model lesson runs on SmolLM2, the idle workers prefilling each next step's
//   prompt while the step before is read; the time from opening a step to its first token
//   is printed, and so is the time from the model being ready to the first token of a
//   step opened cold by its link (never asserted; docs/bench/page.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ARTIFACTS, BASE_URL, launch, waitForPhase } from './lib.mjs';

const SHOTS = join(ARTIFACTS, 'lessons');
const RUN_MS = 60_000;
const REAL_RUN_MS = 300_000;
const LOAD_MS = 300_000;
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let b;
let failed = false;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  b = await launch({ webgpu: true, openDetails: false, viewport: { width: 1280, height: 720 } });
});

after(async () => {
  if (failed) console.error(`--- page console ---\n${b.logs.join('\n')}`);
  await b.close();
});

/** Runs `body`; on failure saves `lessons-<name>-failure.png`. */
async function guarded(name, body) {
  try {
    await body(b.page);
  } catch (e) {
    failed = true;
    await b.page.screenshot({ path: join(ARTIFACTS, `lessons-${name}-failure.png`), fullPage: true }).catch(() => {});
    throw e;
  }
}

async function open(page, url) {
  await page.goto('about:blank');
  await page.goto(url);
  await page.waitForSelector('#pg-status', { state: 'attached' });
}

/** Waits until the lesson bar shows `id` step `n` and its run has ended. */
async function stepDone(page, id, n, timeout = RUN_MS) {
  await page.waitForFunction(
    ([id, n]) => {
      const l = document.querySelector('#lesson');
      const s = document.querySelector('#pg-status');
      return l?.dataset.lesson === id && l.dataset.step === String(n)
        && ['done', 'error', 'stopped'].includes(s?.dataset.state);
    },
    [id, n],
    { timeout },
  );
  const s = await page.evaluate(() => ({ ...document.querySelector('#pg-status').dataset, text: document.querySelector('#pg-status').textContent }));
  assert.equal(s.state, 'done', `lesson ${id} step ${n} ended with ${s.state}: ${s.text}`);
}

/** What overflows: the page sideways, or a figure outside its panel. */
async function overflow(page) {
  return page.evaluate(() => {
    const out = [];
    const doc = document.scrollingElement;
    if (doc.scrollWidth > window.innerWidth + 1) out.push(`the page scrolls sideways (${doc.scrollWidth} > ${window.innerWidth})`);
    for (const v of document.querySelectorAll('.view')) {
      if (!v.offsetParent) continue;
      const r = v.getBoundingClientRect();
      if (v.scrollWidth > v.clientWidth + 1) out.push(`#${v.id} scrolls sideways (${v.scrollWidth} > ${v.clientWidth})`);
      for (const f of v.querySelectorAll('svg, table')) {
        const q = f.getBoundingClientRect();
        if (q.width > 0 && (q.left < r.left - 1 || q.right > r.right + 1)) {
          out.push(`a ${f.tagName} of #${v.id} is drawn outside it (${q.left.toFixed(0)}–${q.right.toFixed(0)} in ${r.left.toFixed(0)}–${r.right.toFixed(0)})`);
        }
      }
    }
    return out;
  });
}

/** axe-core's violations of impact serious or critical on the page as it is. */
async function seriousViolations(page) {
  await page.addScriptTag({ path: AXE });
  const v = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((x) => ({ id: x.id, impact: x.impact, help: x.help, nodes: x.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return v.filter((x) => x.impact === 'serious' || x.impact === 'critical');
}

test('the page lists every lesson, and each toy step runs, highlights its view and fits at 1280×720 in presentation mode', async () => {
  await guarded('walk', async (page) => {
    await open(page, `${BASE_URL}?present=1#lesson=masking-bias&step=1`);
    const lessons = await page.evaluate(() => [...document.querySelectorAll('#lessons a[href*="#lesson="]')]
      .map((a) => a.getAttribute('href').split('#lesson=')[1]));
    assert.deepEqual(lessons, ['masking-bias', 'rejection-cars', 'mcmc', 'smc', 'budget', 'smollm2']);
    assert.equal(await page.getAttribute('#present-toggle', 'aria-pressed'), 'true');
    let id = 'masking-bias';
    let n = 1;
    let moves = 0;
    const walked = [];
    while (id !== 'smollm2') {
      await stepDone(page, id, n);
      const look = await page.getAttribute('.stage', 'data-look');
      const lit = await page.evaluate((look) => {
        const target = look === 'compare' ? '#compare' : `#view-${look}`;
        const el = document.querySelector(target);
        return !!el && el.offsetParent !== null && getComputedStyle(el).boxShadow !== 'none';
      }, look);
      assert.ok(lit, `lesson ${id} step ${n}: the ${look} view is shown and highlighted`);
      assert.deepEqual(await overflow(page), [], `lesson ${id} step ${n} fits at 1280×720`);
      await page.screenshot({ path: join(SHOTS, `${id}-${n}.png`) });
      walked.push(`${id}-${n}`);
      // Alternate the Next button and the arrow key.
      if (moves++ % 2 === 0) await page.click('#lesson-next');
      else {
        await page.evaluate(() => document.activeElement?.blur());
        await page.keyboard.press('ArrowRight');
      }
      const at = await page.waitForFunction(
        (prev) => {
          const l = document.querySelector('#lesson');
          const now = `${l.dataset.lesson}-${l.dataset.step}`;
          return now !== prev && now;
        },
        `${id}-${n}`,
      );
      [id, n] = (await at.jsonValue()).split(/-(?=\d+$)/);
      n = Number(n);
      assert.match(page.url(), new RegExp(`#lesson=${id}&step=${n}$`));
    }
    console.log(`walked ${walked.length} toy steps: ${walked.join(' ')}`);
    // Back, by key and by button.
    await page.keyboard.press('ArrowLeft');
    await page.waitForFunction(() => document.querySelector('#lesson').dataset.lesson === 'budget');
    assert.equal(await page.getAttribute('#lesson', 'data-step'), '3');
    // On request, the step's link as a QR code in a corner, for phones in the room.
    await page.click('#stage-qr');
    const qr = await page.$eval('#present-qr svg', (s) => {
      const r = s.getBoundingClientRect();
      return { right: r.right, bottom: r.bottom, width: r.width };
    });
    assert.ok(qr.width >= 150 && qr.right <= 1280 && qr.bottom <= 720, JSON.stringify(qr));
    await page.screenshot({ path: join(SHOTS, 'present-qr.png') });
    await page.click('#stage-qr');
    assert.equal(await page.locator('#present-qr').count(), 0);
  });
});

test('a deep link opens its step with its preset; a link to no lesson says so', async () => {
  await guarded('links', async (page) => {
    await open(page, `${BASE_URL}#lesson=mcmc&step=2`);
    await stepDone(page, 'mcmc', 2);
    assert.equal(await page.inputValue('#pg-method'), 'mcmc-uniform');
    assert.equal(await page.inputValue('#pg-steps'), '30');
    assert.equal(await page.inputValue('#pg-seed'), '1');
    const words = await page.textContent('#lesson-words');
    assert.match(words, /chains of 30 steps/);
    await open(page, `${BASE_URL}#lesson=no-such-lesson`);
    await page.waitForSelector('#pg-link-message');
    assert.match(await page.textContent('#pg-link-message'), /no lesson named "no-such-lesson"/);
    await open(page, `${BASE_URL}#lesson=mcmc&step=9`);
    await page.waitForSelector('#pg-link-message');
    assert.match(await page.textContent('#pg-link-message'), /steps 1 to 3/);
  });
});

test('the playground fits a phone (390 px wide)', async () => {
  await guarded('phone', async (page) => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const hash of ['#lesson=masking-bias&step=3', '#lesson=rejection-cars&step=3', '#lesson=smc&step=1', '#lesson=mcmc&step=1']) {
        await open(page, `${BASE_URL}${hash}`);
        const [, id, n] = hash.match(/lesson=(.+)&step=(\d+)/);
        await stepDone(page, id, Number(n));
        assert.deepEqual(await overflow(page), [], `${hash} fits at 390 px`);
      }
      await open(page, BASE_URL);
      await page.click('#pg-run');
      await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state === 'done', null, { timeout: RUN_MS });
      assert.deepEqual(await overflow(page), [], 'the playground fits at 390 px');
      await page.screenshot({ path: join(ARTIFACTS, 'playground-390.png'), fullPage: true });
    } finally {
      await page.setViewportSize({ width: 1280, height: 720 });
    }
  });
});

test('?embed=1 shows the stage of the link and its Run button only', async () => {
  await guarded('embed', async (page) => {
    await open(page, `${BASE_URL}?embed=1#example=toy-random`);
    const shown = await page.evaluate(() => Object.fromEntries(
      ['header', '#lessons', '.pg-side', '#stage-run', '#compare', '#quick'].map((s) => [s, !!document.querySelector(s)?.offsetParent]),
    ));
    assert.deepEqual(shown, { header: false, '#lessons': false, '.pg-side': false, '#stage-run': true, '#compare': true, '#quick': false });
    await page.click('#stage-run');
    await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state === 'done', null, { timeout: RUN_MS });
    const samples = await page.evaluate(() => [...document.querySelectorAll('#compare .compare-col')].map((c) => Number(c.dataset.samples)));
    assert.equal(samples.length, 3);
    assert.ok(samples.every((n) => n > 0), `every sampler drew samples: ${samples}`);
    assert.deepEqual(await overflow(page), [], 'the embedded stage fits at 1280×720');
    await page.screenshot({ path: join(ARTIFACTS, 'embed.png') });
  });
});

test('each view downloads as SVG and as PNG', async () => {
  await guarded('export', async (page) => {
    const checked = [];
    for (const [hash, ids] of [
      ['#lesson=rejection-cars&step=3', ['view-trie', 'view-token', 'view-results']],
      ['#lesson=mcmc&step=1', ['view-mcmc']],
      ['#lesson=smc&step=1', ['view-smc']],
      ['#lesson=masking-bias&step=3', ['compare']],
    ]) {
      await open(page, `${BASE_URL}${hash}`);
      const [, id, n] = hash.match(/lesson=(.+)&step=(\d+)/);
      await stepDone(page, id, Number(n));
      assert.deepEqual(await overflow(page), [], `${hash} fits at 1280×720 outside presentation mode`);
      for (const view of ids) {
        const [svg] = await Promise.all([page.waitForEvent('download'), page.click(`button.export-svg[data-view="${view}"]`)]);
        assert.equal(svg.suggestedFilename(), `strait-${view.replace(/^view-/, '')}.svg`);
        const text = readFileSync(await svg.path(), 'utf8');
        assert.match(text, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/, `${view}: an SVG document`);
        if (view === 'view-trie') assert.match(text, /<circle/, 'the trie SVG holds its nodes');
        const [png] = await Promise.all([page.waitForEvent('download'), page.click(`button.export-png[data-view="${view}"]`)]);
        assert.equal(png.suggestedFilename(), `strait-${view.replace(/^view-/, '')}.png`);
        const bytes = readFileSync(await png.path());
        assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${view}: a PNG file`);
        const width = bytes.readUInt32BE(16);
        assert.ok(width >= 200, `${view}: the PNG is ${width} px wide`);
        checked.push(`${view} (${(text.length / 1024).toFixed(0)} KiB SVG, ${width} px PNG)`);
      }
    }
    console.log(`exported: ${checked.join(', ')}`);
  });
});

test('axe-core finds nothing serious or critical on the playground, a lesson and presentation mode', async () => {
  await guarded('axe', async (page) => {
    const found = {};
    for (const [name, url, until] of [
      ['playground', BASE_URL, ['', '']],
      ['lesson', `${BASE_URL}#lesson=rejection-cars&step=3`, ['rejection-cars', 3]],
      ['presentation', `${BASE_URL}?present=1#lesson=smc&step=1`, ['smc', 1]],
    ]) {
      await open(page, url);
      if (until[0]) await stepDone(page, until[0], until[1]);
      else {
        await page.click('#pg-run');
        await page.waitForFunction(() => document.querySelector('#pg-status').dataset.state === 'done', null, { timeout: RUN_MS });
      }
      found[name] = await seriousViolations(page);
    }
    for (const [name, v] of Object.entries(found)) {
      if (v.length) console.error(`axe on ${name}: ${JSON.stringify(v, null, 1)}`);
    }
    assert.deepEqual(Object.fromEntries(Object.entries(found).map(([k, v]) => [k, v.map((x) => x.id)])),
      { playground: [], lesson: [], presentation: [] });
  });
});

test('keyboard: Tab reaches the lesson controls and the run buttons, with a visible focus', async () => {
  await guarded('keyboard', async (page) => {
    await open(page, `${BASE_URL}#lesson=masking-bias&step=1`);
    await stepDone(page, 'masking-bias', 1);
    const reached = new Set();
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab');
      const f = await page.evaluate(() => {
        const e = document.activeElement;
        const cs = getComputedStyle(e);
        return { id: e.id, body: e === document.body, outline: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2 };
      });
      if (f.id) reached.add(f.id);
      if (!f.body && !f.outline) assert.fail(`the focus on #${f.id || '(no id)'} is not visible`);
    }
    // (Stop and Back are disabled here, so not in the tab order.)
    for (const id of ['start-lesson', 'present-toggle', 'lesson-next', 'lesson-close', 'pg-example', 'pg-grammar', 'pg-run', 'pg-step']) {
      assert.ok(reached.has(id), `Tab reaches #${id} (reached: ${[...reached].join(' ')})`);
    }
    // Enter on the focused Next button moves on.
    await page.focus('#lesson-next');
    await page.keyboard.press('Enter');
    await stepDone(page, 'masking-bias', 2);
  });
});

/** Waits until the idle workers have finished prefilling the next step (`data-warmed`,
 * prefills finished, past `before`) and no worker is busy. */
async function prefilled(page, before) {
  await page.waitForFunction((n) => Number(document.querySelector('#pg-worker')?.dataset.warmed) > n, before, { timeout: 30_000 })
    .catch(() => assert.fail('the workers were not asked to prefill the next step while this one was read'));
  await page.waitForFunction(() => document.querySelectorAll('.pool-worker[data-state="busy"]').length === 0
    && document.querySelector('#pg-worker').dataset.busy === '0', null, { timeout: REAL_RUN_MS });
}

test('the real-model lesson runs on SmolLM2; the workers prefill each next step (first token printed)', async () => {
  await guarded('real', async (page) => {
    // The step before the real-model lesson: once the model has loaded, the workers prefill
    // the next step's prompt while this one is read.
    await open(page, `${BASE_URL}?present=1#lesson=budget&step=3`);
    await stepDone(page, 'budget', 3);
    await waitForPhase(page, ['ready'], LOAD_MS);
    let warmed = 0;
    for (let n = 1; n <= 3; n++) {
      await prefilled(page, warmed);
      warmed = Number(await page.getAttribute('#pg-worker', 'data-warmed'));
      await page.click('#lesson-next');
      await stepDone(page, 'smollm2', n, REAL_RUN_MS);
      const first = await page.getAttribute('#pg-status', 'data-first-token-ms');
      console.log(`smollm2 step ${n}: first token ${first} ms after the step opened (its prompt prefilled while the step before was read)`);
      assert.deepEqual(await overflow(page), [], `smollm2 step ${n} fits at 1280×720`);
      await page.screenshot({ path: join(SHOTS, `smollm2-${n}.png`) });
      if (n === 3) break;
    }
  });
});

test('a real-model lesson step opened cold by its link: its first token after the model is ready (printed)', async () => {
  // A recipient's fresh browser, no WebGPU (the CPU path in wasm), the JSON step (AWRS-SMC,
  // 4 particles): nothing was prefilled while a step before was read.
  const cold = await launch({ webgpu: false, openDetails: false, viewport: { width: 1280, height: 720 } });
  try {
    await cold.page.addInitScript(() => {
      const seen = () => {
        if (!window.__readyAt && document.querySelector('main')?.dataset.phase === 'ready') window.__readyAt = performance.now();
        if (!window.__tokenAt && document.querySelector('#pg-status')?.dataset.firstTokenMs) window.__tokenAt = performance.now();
      };
      new MutationObserver(seen).observe(document, { attributes: true, subtree: true, childList: true });
    });
    await cold.page.goto(`${BASE_URL}#lesson=smollm2&step=3`);
    await waitForPhase(cold.page, ['ready'], LOAD_MS);
    await cold.page.waitForFunction(() => window.__tokenAt, null, { timeout: REAL_RUN_MS });
    const ms = await cold.page.evaluate(() => window.__tokenAt - window.__readyAt);
    assert.ok(ms > 0, `the first token came after the model was ready (${ms} ms)`);
    console.log(`# figure: smollm2 step 3 opened cold by its link: first token ${ms.toFixed(0)} ms after the model was ready (goal 2000 ms)`);
  } finally {
    await cold.close();
  }
});
