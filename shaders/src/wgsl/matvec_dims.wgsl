// A matrix's shape and mode (`MatVec::dims`): the uniform the products and the row
// lookup (get_rows.wgsl) read.
struct Dims {
    rows: u32,
    cols: u32,
    mode: u32,
    // q's rows for the stacked q/k/v outputs; the heads' shares for the shares input and
    // output (matvec_x_shares.wgsl, matvec_out_shares.wgsl); else 0.
    extra: u32,
}
