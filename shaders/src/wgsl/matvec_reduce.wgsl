// The matvec's reduction in workgroup memory: a tree of barriers over the 64 partial sums
// of each of the first `n` sums, leaving sum i in partial[i * WG].
fn reduce(lid: u32, v: array<f32, 12>, n: u32) {
    for (var i = 0u; i < n; i++) {
        partial[i * WG + lid] = v[i];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            for (var i = 0u; i < n; i++) {
                partial[i * WG + lid] += partial[i * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
}
