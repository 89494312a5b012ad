// A matvec whose input is RMSNormed on the way in: the product of W with
// x[t] / sqrt(mean(x[t]^2) + eps) * g is computed as (W * g) x[t] times the token's
// 1 / sqrt(mean(x[t]^2) + eps), the sum of squares gathered in the same loop that reads
// x[t] (so the norm costs no dispatch and no pass over memory of its own).
@group(0) @binding(7) var<storage, read> norm_w: array<f32>;

const NORM: bool = true;

// The weights of columns c..c+3 and c+16..c+19 times the norm's weights there.
fn scale8(v: array<f32, 8>, c: u32) -> array<f32, 8> {
    return array<f32, 8>(
        v[0] * norm_w[c], v[1] * norm_w[c + 1u], v[2] * norm_w[c + 2u], v[3] * norm_w[c + 3u],
        v[4] * norm_w[c + 16u], v[5] * norm_w[c + 17u], v[6] * norm_w[c + 18u],
        v[7] * norm_w[c + 19u],
    );
}

fn norm_scale(sum_sq: f32) -> f32 {
    return 1.0 / sqrt(sum_sq / f32(dims.cols) + fuse.eps);
}
