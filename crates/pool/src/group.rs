//! Which Windows processor group a thread pinned to a set of CPUs runs in. Pure
//! arithmetic, on every OS: the pool (`sys.rs`) and coretune-core both pin by it.

/// The processor group a thread pinned to `cpus` runs in, and the mask of the CPUs of
/// `cpus` in that group: the group holding the most of `cpus`, the lowest on a tie. `None`
/// if `cpus` is empty (or names a CPU of group 65,536 or beyond).
///
/// CPUs are numbered as hwloc numbers Windows CPUs: CPU `n` is bit `n % 64` of processor
/// group `n / 64`. A Windows thread runs in one group at a time (`SetThreadGroupAffinity`
/// takes one group and a mask), so a set that crosses groups can only be pinned to one
/// part of it, and this is the rule for which part. The pool pins its workers
/// ([`ThreadPoolBuilder::cpus`](crate::ThreadPoolBuilder::cpus)) this way on Windows, and
/// coretune-core pins any thread this way, so both put a set in the same group. It is
/// plain arithmetic and available on every OS.
///
/// ```
/// use coretune_pool::thread_group;
///
/// assert_eq!(thread_group(&[0, 1]), Some((0, 0b11)));
/// // CPU 63 is the last of group 0, CPUs 64 and 65 are the first two of group 1.
/// assert_eq!(thread_group(&[63, 64, 65]), Some((1, 0b11)));
/// // A tie goes to the lower group.
/// assert_eq!(thread_group(&[3, 64]), Some((0, 0b1000)));
/// assert_eq!(thread_group(&[]), None);
/// ```
pub fn thread_group(cpus: &[usize]) -> Option<(u16, u64)> {
    let mut groups: Vec<(u16, u64)> = Vec::new();
    for &cpu in cpus {
        let group = u16::try_from(cpu / 64).ok()?;
        let bit = 1u64 << (cpu % 64);
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, mask)) => *mask |= bit,
            None => groups.push((group, bit)),
        }
    }
    groups.sort_by_key(|&(g, _)| g);
    // `max_by_key` keeps the last of equal maxima: the lowest group, iterating downwards.
    groups
        .into_iter()
        .rev()
        .max_by_key(|&(_, mask)| mask.count_ones())
}

#[cfg(test)]
mod test {
    use super::thread_group;

    #[test]
    fn a_set_is_pinned_to_its_largest_processor_group() {
        assert_eq!(thread_group(&[]), None);
        assert_eq!(thread_group(&[0, 1]), Some((0, 0b11)));
        assert_eq!(thread_group(&[63, 64, 65]), Some((1, 0b11)));
        // A tie goes to the lower group.
        assert_eq!(thread_group(&[3, 64]), Some((0, 0b1000)));
        assert_eq!(thread_group(&[130]), Some((2, 0b100)));
        // The top bit of a group: the whole 64-bit mask, on any target.
        assert_eq!(thread_group(&[127, 126]), Some((1, 0b11 << 62)));
        assert_eq!(thread_group(&[64 * 65_536]), None);
    }
}
