// Cross-origin isolation on any static host (copied into the built page by `cargo xtask
// build`). One sequence's matrix products are shared between the page's sampling workers
// through a SharedArrayBuffer (app/src/worker/split.rs), which a browser gives only to a
// cross-origin-isolated page: one served with COOP and COEP headers. `cargo xtask serve`
// sends them; GitHub Pages and most static hosts cannot. This service worker adds them to
// the site's own responses; index.html registers it and reloads once where the page is
// not isolated, and where that cannot work (no service workers, an insecure origin, a
// browser without COEP) the page runs as before, each sequence on one worker.
// Cross-origin requests (a `?model=` on another server) pass through untouched.

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (new URL(request.url).origin !== self.location.origin) return;
  // A request that may only be answered from the cache cannot be re-fetched here.
  if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
  event.respondWith(fetch(request).then((response) => {
    if (response.status === 0 || response.type === 'opaqueredirect') return response;
    const headers = new Headers(response.headers);
    headers.set('Cross-Origin-Opener-Policy', 'same-origin');
    headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }));
});
