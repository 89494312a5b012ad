// The matvec's reduction with subgroup sums (adapters with the `subgroups` feature): each
// subgroup adds its invocations' partial sums in registers and its invocation with the
// lowest index writes the result in its own slot (every other slot 0), then one
// invocation per sum adds the 64 slots; sum i is left in partial[i * WG] as
// matvec_reduce.wgsl leaves it. Which invocations share a subgroup, and whether a
// subgroup is full, is the adapter's choice: nothing here depends on it.
fn reduce(lid: u32, v: array<f32, 12>, n: u32) {
    let first = lid == subgroupMin(lid);
    for (var i = 0u; i < n; i++) {
        let s = subgroupAdd(v[i]);
        partial[i * WG + lid] = select(0.0, s, first);
    }
    workgroupBarrier();
    if (lid < n) {
        var total = 0.0;
        for (var j = 0u; j < WG; j++) {
            total += partial[lid * WG + j];
        }
        partial[lid * WG] = total;
    }
    workgroupBarrier();
}
