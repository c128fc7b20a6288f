//! `raymesh`: ray–triangle intersection through a BVH over a generated mesh — CPU-bound, the job
//! of the article coretune grew out of.
//!
//! The mesh is a furniture scene generated in code (a table with a vase, four chairs with
//! slatted backs; cylinders, boxes and a surface of revolution, ≈ 50,000 triangles), so there are
//! no data files and every run sees the same bytes. A bounding volume hierarchy (binary, binned
//! surface-area heuristic, ≤ 4 triangles a leaf) is built once at preparation.
//!
//! A run traces 3 tables of rays (by default 975,065 each, as in the article: 2143 × 455), one
//! table per camera, and stores for every ray its nearest hit as `(t as f32 bits) << 32 |
//! triangle index` (a miss is `+inf, u32::MAX`) using Möller–Trumbore intersection. Workers take
//! blocks of [`BLOCK`] rays from a shared counter (dynamic scheduling, as renderers do), so any
//! thread count and any placement compute each ray with the same instructions: the tables must
//! be bit-identical to the single-threaded ones.
//!
//! Verification: every ray was written; every 97th ray is recomputed and compared bit for bit;
//! the checksum of all tables equals the checksum of the reference tables, which a plain
//! single-threaded loop computes once per process, the first time a run is verified.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::{RunConfig, RunOutput, Size, Unit, Work, Workload, WorkloadError, fnv1a, run_workers};
use crate::measure::ThreadTracker;

/// Rays per table by default: the article's 2143 × 455.
pub(super) const DEFAULT_RAYS: usize = 975_065;
/// Rays per table in a sweep when no size is given: the default sweep (about 80 runs on a 2-PU
/// machine) then takes about a minute on 2 cores.
pub(super) const SWEEP_RAYS: usize = 500_000;
/// Tables (cameras) per run.
pub(super) const TABLES: usize = 3;
/// Rays a worker takes at a time: big enough that the shared counter costs nothing (one atomic
/// per ~100 µs of work), small enough that 64 threads share a small table evenly.
pub(super) const BLOCK: usize = 1024;
/// Width/height of the article's tables; other sizes keep this aspect.
const ASPECT: f64 = 2143.0 / 455.0;
/// Marks a result slot no worker wrote.
const UNWRITTEN: u64 = u64::MAX;

type V3 = [f32; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn normalize(a: V3) -> V3 {
    scale(a, 1.0 / dot(a, a).sqrt())
}
/// Grows the box (`min`, `max`) to contain the box (`lo`, `hi`) (a point when `lo == hi`).
fn grow(min: &mut V3, max: &mut V3, lo: V3, hi: V3) {
    for a in 0..3 {
        min[a] = min[a].min(lo[a]);
        max[a] = max[a].max(hi[a]);
    }
}

/// Triangles of the generated scene.
#[derive(Debug, Default)]
struct MeshBuilder {
    tris: Vec<[V3; 3]>,
}

impl MeshBuilder {
    fn quad(&mut self, a: V3, b: V3, c: V3, d: V3) {
        self.tris.push([a, b, c]);
        self.tris.push([a, c, d]);
    }

    /// An axis-aligned box, each face split into `n × n` quads.
    fn cuboid(&mut self, min: V3, max: V3, n: usize) {
        #[allow(clippy::cast_precision_loss)] // small grid counts
        let f = |i: usize| i as f32 / n as f32;
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        for axis in 0..3 {
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            for side in [min[axis], max[axis]] {
                for i in 0..n {
                    for j in 0..n {
                        let point = |ti: f32, tj: f32| {
                            let mut p = [0.0; 3];
                            p[axis] = side;
                            p[u] = lerp(min[u], max[u], ti);
                            p[v] = lerp(min[v], max[v], tj);
                            p
                        };
                        let (a, b) = (f(i), f(i + 1));
                        let (c, d) = (f(j), f(j + 1));
                        self.quad(point(a, c), point(b, c), point(b, d), point(a, d));
                    }
                }
            }
        }
    }

    /// A surface of revolution around the vertical axis through `base`: `profile` is a list of
    /// (radius, height) from bottom to top; `segments` around.
    fn revolve(&mut self, base: V3, profile: &[(f32, f32)], segments: usize) {
        #[allow(clippy::cast_precision_loss)]
        let angle = |k: usize| std::f32::consts::TAU * (k % segments) as f32 / segments as f32;
        let at = |r: f32, h: f32, k: usize| {
            let a = angle(k);
            [base[0] + r * a.cos(), base[1] + h, base[2] + r * a.sin()]
        };
        for w in profile.windows(2) {
            let ((r0, h0), (r1, h1)) = (w[0], w[1]);
            for k in 0..segments {
                self.quad(
                    at(r0, h0, k),
                    at(r0, h0, k + 1),
                    at(r1, h1, k + 1),
                    at(r1, h1, k),
                );
            }
        }
    }

    /// A closed cylinder (leg), `rings` bands up its side.
    fn cylinder(&mut self, base: V3, radius: f32, height: f32, segments: usize, rings: usize) {
        #[allow(clippy::cast_precision_loss)]
        let mut profile: Vec<(f32, f32)> = (0..=rings)
            .map(|i| (radius, height * i as f32 / rings as f32))
            .collect();
        profile.insert(0, (0.0, 0.0));
        profile.push((0.0, height));
        self.revolve(base, &profile, segments);
    }

    /// A chair facing `facing` (±1 along z) with its seat centred at (x, z).
    fn chair(&mut self, x: f32, z: f32, facing: f32) {
        let (w, seat_h) = (0.42, 0.45);
        self.cuboid(
            [x - w / 2.0, seat_h, z - w / 2.0],
            [x + w / 2.0, seat_h + 0.04, z + w / 2.0],
            12,
        );
        for (dx, dz) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            let base = [x + dx * (w / 2.0 - 0.03), 0.0, z + dz * (w / 2.0 - 0.03)];
            self.cylinder(base, 0.018, seat_h, 40, 14);
        }
        // Back: two posts and five slats, on the side away from the table.
        let back_z = z - facing * (w / 2.0 - 0.02);
        for dx in [-1.0, 1.0] {
            self.cylinder(
                [x + dx * (w / 2.0 - 0.03), seat_h, back_z],
                0.016,
                0.5,
                32,
                12,
            );
        }
        for s in 0..5 {
            #[allow(clippy::cast_precision_loss)]
            let sx = x - w / 2.0 + 0.06 + s as f32 * (w - 0.12) / 4.0;
            self.cuboid(
                [sx - 0.012, seat_h + 0.08, back_z - 0.01],
                [sx + 0.012, seat_h + 0.46, back_z + 0.01],
                4,
            );
        }
    }

    /// The scene: a table with a vase, four chairs, in a closed room (so every ray ends on
    /// something, as in an interior render). Returns the triangles and how many are furniture
    /// (they come first).
    fn furniture() -> (Vec<[V3; 3]>, usize) {
        let mut m = MeshBuilder::default();
        m.cuboid([-0.8, 0.72, -0.45], [0.8, 0.76, 0.45], 24);
        for (x, z) in [(-0.72, -0.37), (0.72, -0.37), (0.72, 0.37), (-0.72, 0.37)] {
            m.cylinder([x, 0.0, z], 0.035, 0.72, 48, 24);
        }
        let vase: Vec<(f32, f32)> = (0..=64)
            .map(|i| {
                #[allow(clippy::cast_precision_loss)]
                let t = i as f32 / 64.0;
                let r = 0.05 + 0.06 * (std::f32::consts::PI * t * 1.4).sin().abs() + 0.01 * t;
                (r, 0.3 * t)
            })
            .collect();
        m.revolve([0.0, 0.76, 0.0], &vase, 128);
        for (x, z, facing) in [
            (-0.4, -0.75, -1.0),
            (0.4, -0.75, -1.0),
            (-0.4, 0.75, 1.0),
            (0.4, 0.75, 1.0),
        ] {
            m.chair(x, z, facing);
        }
        let furniture = m.tris.len();
        m.cuboid([-3.0, -0.001, -3.0], [3.0, 2.6, 3.0], 32);
        (m.tris, furniture)
    }
}

#[derive(Clone, Copy, Debug)]
struct Node {
    min: V3,
    max: V3,
    /// Leaf: first triangle; inner: index of the left child (the right one follows it).
    first: u32,
    /// Triangles in a leaf; 0 for an inner node.
    count: u32,
}

/// A triangle prepared for Möller–Trumbore: a vertex and two edges.
#[derive(Clone, Copy, Debug)]
struct Tri {
    v0: V3,
    e1: V3,
    e2: V3,
    /// Index in the generated mesh (stable whatever the BVH order).
    id: u32,
}

#[derive(Debug)]
struct Bvh {
    nodes: Vec<Node>,
    tris: Vec<Tri>,
}

impl Bvh {
    const LEAF: usize = 4;

    fn build(mesh: &[[V3; 3]]) -> Self {
        let mut order: Vec<(V3, u32)> = mesh
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let c = scale(add(add(t[0], t[1]), t[2]), 1.0 / 3.0);
                (
                    c,
                    u32::try_from(i).expect("mesh has fewer than 2^32 triangles"),
                )
            })
            .collect();
        let mut nodes = vec![Node {
            min: [0.0; 3],
            max: [0.0; 3],
            first: 0,
            count: 0,
        }];
        let mut stack = vec![(0usize, 0usize, order.len())];
        while let Some((node, lo, hi)) = stack.pop() {
            let (mut min, mut max) = ([f32::MAX; 3], [f32::MIN; 3]);
            let (mut cmin, mut cmax) = ([f32::MAX; 3], [f32::MIN; 3]);
            for &(c, id) in &order[lo..hi] {
                for v in mesh[id as usize] {
                    grow(&mut min, &mut max, v, v);
                }
                grow(&mut cmin, &mut cmax, c, c);
            }
            nodes[node].min = min;
            nodes[node].max = max;
            if hi - lo <= Self::LEAF {
                nodes[node].first = u32::try_from(lo).expect("fits");
                nodes[node].count = u32::try_from(hi - lo).expect("fits");
                continue;
            }
            let mid = sah_split(mesh, &mut order[lo..hi], cmin, cmax)
                .unwrap_or_else(|| median_split(&mut order[lo..hi], cmin, cmax))
                + lo;
            let left = nodes.len();
            nodes[node].first = u32::try_from(left).expect("fits");
            let blank = nodes[node];
            nodes.push(blank);
            nodes.push(blank);
            stack.push((left, lo, mid));
            stack.push((left + 1, mid, hi));
        }
        let tris = order
            .iter()
            .map(|&(_, id)| {
                let t = mesh[id as usize];
                Tri {
                    v0: t[0],
                    e1: sub(t[1], t[0]),
                    e2: sub(t[2], t[0]),
                    id,
                }
            })
            .collect();
        Self { nodes, tris }
    }

    /// Nearest hit along the ray, packed as `(t bits) << 32 | triangle id`.
    fn trace(&self, origin: V3, dir: V3) -> u64 {
        let inv = [1.0 / dir[0], 1.0 / dir[1], 1.0 / dir[2]];
        let mut best_t = f32::INFINITY;
        let mut best_id = u32::MAX;
        let mut stack = [0u32; 64];
        let mut sp = 1;
        while sp > 0 {
            sp -= 1;
            let node = &self.nodes[stack[sp] as usize];
            if node.count > 0 {
                let first = node.first as usize;
                for tri in &self.tris[first..first + node.count as usize] {
                    if let Some(t) = intersect(tri, origin, dir) {
                        if t < best_t || (t == best_t && tri.id < best_id) {
                            best_t = t;
                            best_id = tri.id;
                        }
                    }
                }
                continue;
            }
            let (l, r) = (node.first as usize, node.first as usize + 1);
            let tl = slab(&self.nodes[l], origin, inv, best_t);
            let tr = slab(&self.nodes[r], origin, inv, best_t);
            // Push the farther child first so the nearer one is visited first.
            let (near, far) = if tl <= tr {
                ((l, tl), (r, tr))
            } else {
                ((r, tr), (l, tl))
            };
            if far.1.is_finite() {
                stack[sp] = u32::try_from(far.0).expect("fits");
                sp += 1;
            }
            if near.1.is_finite() {
                stack[sp] = u32::try_from(near.0).expect("fits");
                sp += 1;
            }
        }
        (u64::from(best_t.to_bits()) << 32) | u64::from(best_id)
    }
}

/// Bins of the surface-area heuristic: 16 is the usual trade-off between build time and tree
/// quality (Wald, "On fast construction of SAH-based bounding volume hierarchies", 2007).
const SAH_BINS: usize = 16;

fn surface(min: V3, max: V3) -> f32 {
    let d = sub(max, min);
    if d[0] < 0.0 {
        return 0.0;
    }
    2.0 * (d[0] * d[1] + d[1] * d[2] + d[2] * d[0])
}

/// Splits `items` (centroid, triangle) by the binned surface-area heuristic: returns the size of
/// the left part after a stable partition, or `None` when no split beats the others (all
/// centroids in one bin).
fn sah_split(mesh: &[[V3; 3]], items: &mut [(V3, u32)], cmin: V3, cmax: V3) -> Option<usize> {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let bin_of = |c: f32, axis: usize| -> usize {
        let ext = cmax[axis] - cmin[axis];
        (((c - cmin[axis]) / ext * SAH_BINS as f32) as usize).min(SAH_BINS - 1)
    };
    let mut best: Option<(f32, usize, usize)> = None; // (cost, axis, first bin of the right side)
    for axis in 0..3 {
        if cmax[axis] - cmin[axis] <= 0.0 {
            continue;
        }
        let mut bins = [([f32::MAX; 3], [f32::MIN; 3], 0usize); SAH_BINS];
        for &(c, id) in items.iter() {
            let b = &mut bins[bin_of(c[axis], axis)];
            for v in mesh[id as usize] {
                grow(&mut b.0, &mut b.1, v, v);
            }
            b.2 += 1;
        }
        // Costs of every plane from the right, then sweep from the left.
        let mut right_cost = [0.0f32; SAH_BINS];
        let (mut rmin, mut rmax, mut rn) = ([f32::MAX; 3], [f32::MIN; 3], 0usize);
        for i in (1..SAH_BINS).rev() {
            grow(&mut rmin, &mut rmax, bins[i].0, bins[i].1);
            rn += bins[i].2;
            #[allow(clippy::cast_precision_loss)]
            let cost = surface(rmin, rmax) * rn as f32;
            right_cost[i] = cost;
        }
        let (mut lmin, mut lmax, mut ln) = ([f32::MAX; 3], [f32::MIN; 3], 0usize);
        for i in 1..SAH_BINS {
            grow(&mut lmin, &mut lmax, bins[i - 1].0, bins[i - 1].1);
            ln += bins[i - 1].2;
            if ln == 0 || ln == items.len() {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let cost = surface(lmin, lmax) * ln as f32 + right_cost[i];
            if best.is_none_or(|(c, _, _)| cost < c) {
                best = Some((cost, axis, i));
            }
        }
    }
    let (_, axis, split) = best?;
    // A stable partition keeps the build deterministic.
    items.sort_by_key(|&(c, _)| bin_of(c[axis], axis) >= split);
    let left = items
        .iter()
        .take_while(|&&(c, _)| bin_of(c[axis], axis) < split)
        .count();
    (left > 0 && left < items.len()).then_some(left)
}

/// Median split on the longest centroid axis (for when SAH cannot separate the centroids).
fn median_split(items: &mut [(V3, u32)], cmin: V3, cmax: V3) -> usize {
    let ext = sub(cmax, cmin);
    let axis = if ext[0] >= ext[1] && ext[0] >= ext[2] {
        0
    } else if ext[1] >= ext[2] {
        1
    } else {
        2
    };
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| {
        a.0[axis].total_cmp(&b.0[axis]).then(a.1.cmp(&b.1))
    });
    mid
}

/// Entry distance of the ray into the node's box, or +inf when it misses or enters beyond `limit`.
fn slab(node: &Node, o: V3, inv: V3, limit: f32) -> f32 {
    let mut t0 = 0.0f32;
    let mut t1 = limit;
    for a in 0..3 {
        let near = (node.min[a] - o[a]) * inv[a];
        let far = (node.max[a] - o[a]) * inv[a];
        let (near, far) = if near <= far {
            (near, far)
        } else {
            (far, near)
        };
        t0 = t0.max(near);
        t1 = t1.min(far);
    }
    if t0 <= t1 { t0 } else { f32::INFINITY }
}

/// Möller–Trumbore: distance to the triangle, if the ray hits it in front of the origin.
fn intersect(tri: &Tri, o: V3, d: V3) -> Option<f32> {
    const EPS: f32 = 1e-7;
    let p = cross(d, tri.e2);
    let det = dot(tri.e1, p);
    if det.abs() < EPS {
        return None;
    }
    let inv_det = 1.0 / det;
    let s = sub(o, tri.v0);
    let u = dot(s, p) * inv_det;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = cross(s, tri.e1);
    let v = dot(d, q) * inv_det;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = dot(tri.e2, q) * inv_det;
    (t > EPS).then_some(t)
}

/// A pinhole camera producing one table of rays.
#[derive(Clone, Copy, Debug)]
struct Camera {
    origin: V3,
    forward: V3,
    right: V3,
    up: V3,
}

impl Camera {
    fn looking_at(origin: V3, target: V3, fov_deg: f32) -> Self {
        let forward = normalize(sub(target, origin));
        let right = normalize(cross(forward, [0.0, 1.0, 0.0]));
        let up = cross(right, forward);
        let h = (fov_deg.to_radians() / 2.0).tan();
        #[allow(clippy::cast_possible_truncation)] // aspect ratio to f32
        let aspect = ASPECT as f32;
        Self {
            origin,
            forward,
            right: scale(right, h * aspect),
            up: scale(up, h),
        }
    }
}

/// Parameters of a raymesh instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Params {
    /// Rays per table.
    pub rays: usize,
}

impl Params {
    /// The parameters for a size: small 20,000 rays per table, default 975,065, large 4 × that.
    pub(super) fn for_size(size: Size) -> Self {
        let rays = match size {
            Size::Small => 20_000,
            Size::Default => DEFAULT_RAYS,
            Size::Large => 4 * DEFAULT_RAYS,
        };
        Self { rays }
    }
}

/// The prepared workload.
#[derive(Debug)]
pub(super) struct RayMesh {
    params: Params,
    bvh: Bvh,
    cameras: [Camera; TABLES],
    width: usize,
    height: usize,
    triangles: usize,
    furniture: usize,
    reference: OnceLock<u64>,
}

/// A run's result: all tables, one after the other, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tables {
    /// Packed hits, `TABLES × rays`.
    pub hits: Vec<u64>,
}

impl RayMesh {
    /// Generates the mesh and builds the BVH.
    ///
    /// # Errors
    ///
    /// [`WorkloadError::BadParameter`] for zero rays.
    pub(super) fn new(params: Params) -> Result<Self, WorkloadError> {
        if params.rays == 0 {
            return Err(WorkloadError::BadParameter {
                workload: "raymesh",
                message: "--rays must be at least 1".into(),
            });
        }
        let (mesh, furniture) = MeshBuilder::furniture();
        let bvh = Bvh::build(&mesh);
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let width = ((params.rays as f64 * ASPECT).sqrt().ceil() as usize).clamp(1, params.rays);
        let height = params.rays.div_ceil(width);
        let target = [0.0, 0.5, 0.0];
        let cameras = [
            Camera::looking_at([0.2, 1.0, 2.6], target, 24.0),
            Camera::looking_at([2.4, 0.9, -0.7], target, 24.0),
            Camera::looking_at([-0.9, 2.6, 0.8], target, 30.0),
        ];
        Ok(Self {
            params,
            triangles: mesh.len(),
            furniture,
            bvh,
            cameras,
            width,
            height,
            reference: OnceLock::new(),
        })
    }

    #[cfg(test)]
    /// Triangles in the generated mesh.
    pub(super) fn triangles(&self) -> usize {
        self.triangles
    }

    #[cfg(test)]
    /// Table width × height (the last row may be partial).
    pub(super) fn table_shape(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Total rays of a run.
    pub(super) fn total_rays(&self) -> usize {
        TABLES * self.params.rays
    }

    /// Traces ray `k` of the concatenated tables.
    fn trace(&self, k: usize) -> u64 {
        let (table, i) = (k / self.params.rays, k % self.params.rays);
        let (col, row) = (i % self.width, i / self.width);
        let cam = &self.cameras[table];
        #[allow(clippy::cast_precision_loss)]
        let (u, v) = (
            ((col as f32 + 0.5) / self.width as f32) * 2.0 - 1.0,
            1.0 - ((row as f32 + 0.5) / self.height as f32) * 2.0,
        );
        let dir = normalize(add(cam.forward, add(scale(cam.right, u), scale(cam.up, v))));
        self.bvh.trace(cam.origin, dir)
    }

    /// The reference checksum: a plain single-threaded loop over every ray, once per process.
    fn reference_checksum(&self) -> u64 {
        *self
            .reference
            .get_or_init(|| fnv1a((0..self.total_rays()).map(|k| self.trace(k))))
    }
}

impl Workload for RayMesh {
    type Output = Tables;

    fn name(&self) -> &'static str {
        "raymesh"
    }

    fn describe(&self) -> String {
        format!(
            "{TABLES} tables of {} rays ({}x{}) through a BVH of {} triangles \
             ({} of furniture in a room)",
            self.params.rays, self.width, self.height, self.triangles, self.furniture
        )
    }

    fn run(
        &self,
        config: &RunConfig<'_>,
        tracker: &ThreadTracker,
    ) -> Result<RunOutput<Tables>, WorkloadError> {
        let total = self.total_rays();
        let out: Vec<AtomicU64> = (0..total).map(|_| AtomicU64::new(UNWRITTEN)).collect();
        let next = AtomicUsize::new(0);
        run_workers("raymesh", config, tracker, |_, probe| {
            // A permit per block, kept from one block to the next (no hand-off per block).
            let mut seat = config.throttle.map(coretune_pool::Throttle::seat);
            loop {
                if let Some(seat) = &mut seat {
                    seat.hold();
                }
                let start = next.fetch_add(BLOCK, Ordering::Relaxed);
                if start >= total {
                    break;
                }
                for (k, slot) in out
                    .iter()
                    .enumerate()
                    .take((start + BLOCK).min(total))
                    .skip(start)
                {
                    slot.store(self.trace(k), Ordering::Relaxed);
                }
                if let Some(throttle) = config.throttle {
                    throttle.record_completions(1); // one block: an adaptive throttle's unit
                }
                probe.sample();
            }
        })?;
        let hits: Vec<u64> = out.into_iter().map(AtomicU64::into_inner).collect();
        #[allow(clippy::cast_precision_loss)]
        let amount = total as f64;
        Ok(RunOutput {
            work: Work {
                amount,
                unit: Unit::MraysPerSec,
                kernel_time: None,
            },
            result: Tables { hits },
        })
    }

    fn verify(&self, tables: &Tables) -> Result<(), String> {
        if tables.hits.len() != self.total_rays() {
            return Err(format!(
                "raymesh: {} results for {} rays",
                tables.hits.len(),
                self.total_rays()
            ));
        }
        if let Some(k) = tables.hits.iter().position(|&h| h == UNWRITTEN) {
            return Err(format!("raymesh: ray {k} was never traced"));
        }
        for k in (0..tables.hits.len()).step_by(97) {
            let want = self.trace(k);
            if tables.hits[k] != want {
                return Err(format!(
                    "raymesh: ray {k} is {:#018x}, recomputed {want:#018x}",
                    tables.hits[k]
                ));
            }
        }
        let got = fnv1a(tables.hits.iter().copied());
        let want = self.reference_checksum();
        if got != want {
            return Err(format!(
                "raymesh: tables checksum {got:#018x} differs from the single-threaded reference \
                 {want:#018x}"
            ));
        }
        Ok(())
    }

    fn checksum(&self, tables: &Tables) -> Option<u64> {
        Some(fnv1a(tables.hits.iter().copied()))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::workload::run_measured;

    fn small() -> RayMesh {
        RayMesh::new(Params { rays: 3000 }).unwrap()
    }

    #[test]
    fn mesh_is_furniture_sized_and_the_cameras_frame_it() {
        let w = small();
        assert!(
            (30_000..100_000).contains(&w.triangles()),
            "{}",
            w.triangles()
        );
        let tracker = ThreadTracker::new();
        let out = w.run(&RunConfig::threads(1), &tracker).unwrap();
        let tables = &out.result;
        let ids = tables.hits.iter().map(|&h| h & 0xffff_ffff);
        let on_furniture = ids.clone().filter(|&id| id < w.furniture as u64).count();
        let missed = ids.filter(|&id| id == u64::from(u32::MAX)).count();
        // A closed room: every ray ends on something, and the cameras frame the furniture (the
        // tables are 4.7 times wider than tall, so the room's walls fill the sides).
        assert_eq!(missed, 0);
        assert!(
            on_furniture > tables.hits.len() / 6,
            "{on_furniture} of {} on furniture",
            tables.hits.len()
        );
    }

    #[test]
    fn default_tables_are_the_articles_shape() {
        let w = RayMesh::new(Params::for_size(Size::Default)).unwrap();
        assert_eq!(w.table_shape(), (2143, 455));
        assert_eq!(w.total_rays(), 3 * 975_065);
    }

    #[test]
    fn any_thread_count_gives_identical_tables() {
        let w = small();
        let one = run_measured(&w, &RunConfig::threads(1)).unwrap();
        assert!(one.verified, "{:?}", one.verify_error);
        for threads in [2, 3, 7] {
            let r = run_measured(&w, &RunConfig::threads(threads)).unwrap();
            assert!(r.verified, "{threads} threads: {:?}", r.verify_error);
            assert_eq!(r.checksum, one.checksum, "{threads} threads");
            assert_eq!(r.measurement.threads.len(), threads);
        }
    }

    #[test]
    fn verification_catches_a_corrupted_table() {
        let w = small();
        let tracker = ThreadTracker::new();
        let mut out = w.run(&RunConfig::threads(2), &tracker).unwrap();
        assert_eq!(w.verify(&out.result), Ok(()));
        let tables = &mut out.result;
        // One ray off the sampled grid, nudged by one ulp: only the checksum can see it.
        tables.hits[1000] ^= 1 << 32;
        let err = w.verify(&out.result).unwrap_err();
        assert!(err.contains("checksum"), "{err}");
        let tables = &mut out.result;
        tables.hits[1000] ^= 1 << 32;
        tables.hits[5] = UNWRITTEN;
        assert!(w.verify(&out.result).unwrap_err().contains("never traced"));
    }

    #[test]
    fn triangle_intersection_is_moller_trumbore() {
        let tri = Tri {
            v0: [0.0, 0.0, 1.0],
            e1: [1.0, 0.0, 0.0],
            e2: [0.0, 1.0, 0.0],
            id: 0,
        };
        assert_eq!(
            intersect(&tri, [0.25, 0.25, 0.0], [0.0, 0.0, 1.0]),
            Some(1.0)
        );
        assert_eq!(intersect(&tri, [0.75, 0.75, 0.0], [0.0, 0.0, 1.0]), None);
        assert_eq!(intersect(&tri, [0.25, 0.25, 2.0], [0.0, 0.0, 1.0]), None);
    }
}
