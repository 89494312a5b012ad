// A matrix's shape and mode (`MatVec::dims`): the uniform the products and the row
// lookup (get_rows.wgsl) read.
struct Dims {
    rows: u32,
    cols: u32,
    mode: u32,
    pad: u32,
}
