// Shared helpers of the end-to-end tests: launch Debian's Chromium headless through
// playwright-core with the WebGPU-on-SwiftShader flags (Chromium runs WebGPU on its
// software Vulkan when told to), each launch with a fresh profile; screenshots on failure
// into e2e/artifacts/; a plain static server for the published site.
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BASE_URL = process.env.STRAIT_URL ?? 'http://127.0.0.1:8080/';
export const ARTIFACTS = join(dirname(fileURLToPath(import.meta.url)), 'artifacts');
mkdirSync(ARTIFACTS, { recursive: true });

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const COMMON = [
  '--no-sandbox',
  '--disable-gpu-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const WEBGPU = ['--enable-unsafe-webgpu', '--enable-features=Vulkan'];

/**
 * A headless Chromium with a fresh profile; `close()` also removes the profile.
 * `openDetails: false` shows the page's folded details folded, as a first visit does.
 * playwright-core passes `--headless=new`-equivalent `--headless` itself.
 */
export async function launch({ webgpu = true, extraArgs = [], openDetails = true, viewport = { width: 1200, height: 900 } } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'strait-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...COMMON, ...(webgpu ? WEBGPU : []), ...extraArgs],
    viewport,
    acceptDownloads: true,
  });
  // The page folds its engineering details (the backend select, the model file input,
  // the quick form) until they are opened once; the engine tests work in them, so they
  // start as someone who opened them. The lesson tests see the page as a newcomer does.
  if (openDetails) {
    await context.addInitScript(() => {
      try {
        for (const id of ['engine', 'quick', 'workers']) localStorage.setItem(`strait.open.${id}`, '1');
      } catch {}
    });
  }
  const page = context.pages()[0] ?? (await context.newPage());
  const logs = [];
  page.on('console', (m) => logs.push(`[${m.type()}] ${m.text()}`));
  // Uncaught page errors also end waits early (see waitForPhase).
  page.straitErrors = [];
  page.on('pageerror', (e) => {
    logs.push(`[pageerror] ${e.message}`);
    page.straitErrors.push(e.message);
  });
  return {
    context,
    page,
    logs,
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Runs `body(page)`; on failure saves `<name>-failure.png` and prints the page's console. */
export async function withPage(name, options, body) {
  const b = await launch(options);
  try {
    return await body(b.page, b);
  } catch (e) {
    await b.page.screenshot({ path: join(ARTIFACTS, `${name}-failure.png`), fullPage: true }).catch(() => {});
    console.error(`--- console of ${name} ---\n${b.logs.join('\n')}`);
    throw e;
  } finally {
    await b.close();
  }
}

/** The page's phase (`main[data-phase]`). */
export async function phase(page) {
  return page.getAttribute('main', 'data-phase');
}

/** Rejects as soon as the page throws an uncaught error (a crashed wasm never settles). */
function pageCrash(page) {
  let timer;
  const crashed = new Promise((_, reject) => {
    timer = setInterval(() => {
      if (page.straitErrors?.length) reject(new Error(`the page threw: ${page.straitErrors[0]}`));
    }, 250);
  });
  return { crashed, stop: () => clearInterval(timer) };
}

/** `promise`, or a rejection as soon as the page throws an uncaught error. */
export async function unlessCrash(page, promise) {
  const crash = pageCrash(page);
  try {
    return await Promise.race([crash.crashed, promise]);
  } finally {
    crash.stop();
  }
}

/** Waits until `main[data-phase]` is one of `phases`; fails fast on `failed`/`no-webgpu`
 *  and on an uncaught page error. */
export async function waitForPhase(page, phases, timeout) {
  const crash = pageCrash(page);
  try {
    await Promise.race([
      crash.crashed,
      page.waitForFunction(
        (want) => {
          const p = document.querySelector('main')?.dataset.phase;
          return want.includes(p) || p === 'failed' || p === 'no-webgpu';
        },
        phases,
        { timeout, polling: 250 },
      ),
    ]);
  } finally {
    crash.stop();
  }
  const p = await phase(page);
  if (!phases.includes(p)) {
    const msg = await page.locator('#model-error, #webgpu-missing').first().textContent().catch(() => '');
    throw new Error(`page reached phase ${p} instead of ${phases}: ${msg}`);
  }
  return p;
}

/** Starts counting animation frames in the page (`stopFrameCount` reads the rate). */
export async function startFrameCount(page) {
  await page.evaluate(() => {
    window.__frames = { n: 0, t0: performance.now(), on: true };
    const tick = () => {
      if (!window.__frames.on) return;
      window.__frames.n++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}

/** Stops the count: frames per second (one decimal) and seconds since the start. */
export async function stopFrameCount(page) {
  return page.evaluate(() => {
    const f = window.__frames;
    f.on = false;
    const secs = (performance.now() - f.t0) / 1000;
    return { fps: Math.round((f.n / secs) * 10) / 10, secs: Math.round(secs * 10) / 10 };
  });
}

/**
 * One browser shared by the tests of a file: launched before them, closed after them. A
 * test that fails sets `failed`: then `<name>-failure.png` is saved and the page's console
 * printed. What the tests put in `figures` is printed after them as one
 * `# figure: <label>: {...}` line.
 */
export function sharedBrowser(name, label) {
  const shared = { b: null, failed: false, figures: {} };
  before(async () => {
    shared.b = await launch({ webgpu: true });
  });
  after(async () => {
    const { b } = shared;
    if (shared.failed) {
      await b.page.screenshot({ path: join(ARTIFACTS, `${name}-failure.png`), fullPage: true }).catch(() => {});
      console.error(`--- page console ---\n${b.logs.join('\n')}`);
    }
    await b.close();
    if (Object.keys(shared.figures).length) {
      console.log(`# figure: ${label}: ${JSON.stringify(shared.figures)}`);
    }
  });
  return shared;
}

/** The built site (`cargo xtask dist` or `build`): `STRAIT_DIST`, else `../dist`. */
export const DIST = process.env.STRAIT_DIST ?? join(dirname(ARTIFACTS), '..', 'dist');

/**
 * Serves `dir` the way a plain static host would: Python's `http.server`, with none of the
 * headers our own server sends, under the sub-path `/<sub>/` (as a GitHub Pages project
 * site is). Resolves to `{ url, close() }`.
 */
export async function servePlain(dir, sub = 'strait') {
  const root = mkdtempSync(join(tmpdir(), 'strait-site-'));
  symlinkSync(dir, join(root, sub));
  const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', root],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`http.server did not start: ${out}`)), 15_000);
    server.on('exit', (code) => reject(new Error(`http.server exited (${code}): ${out}`)));
    server.stdout.on('data', (d) => {
      out += d;
      const m = /port (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    server.stderr.on('data', () => {}); // one access-log line per request
  });
  return {
    url: `http://127.0.0.1:${port}/${sub}/`,
    close() {
      server.kill();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
