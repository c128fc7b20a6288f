//! hwloc's flag arguments (`--restrict-flags`, `--local-memory-flags`), read as
//! `hwloc_utils_parse_flags` reads them.

use super::cnum::strtoul;
use super::location::Message;

/// A flag name hwloc's tools accept, with its value.
type FlagName = (&'static str, u64);

/// `hwloc_topology_restrict` flags, as `--restrict-flags` names them.
pub const RESTRICT_FLAGS: &[FlagName] = &[
    ("HWLOC_RESTRICT_FLAG_REMOVE_CPULESS", 1 << 0),
    ("HWLOC_RESTRICT_FLAG_BYNODESET", 1 << 3),
    ("HWLOC_RESTRICT_FLAG_REMOVE_MEMLESS", 1 << 4),
    ("HWLOC_RESTRICT_FLAG_ADAPT_MISC", 1 << 1),
    ("HWLOC_RESTRICT_FLAG_ADAPT_IO", 1 << 2),
];

/// `hwloc_get_local_numanode_objs` flags, as `--local-memory-flags` names them.
pub const LOCAL_NUMANODE_FLAGS: &[FlagName] = &[
    ("HWLOC_LOCAL_NUMANODE_FLAG_LARGER_LOCALITY", 1 << 0),
    ("HWLOC_LOCAL_NUMANODE_FLAG_SMALLER_LOCALITY", 1 << 1),
    ("HWLOC_LOCAL_NUMANODE_FLAG_ALL", 1 << 2),
    // hwloc 2.12.1: the nodes whose locality intersects the set.
    ("HWLOC_LOCAL_NUMANODE_FLAG_INTERSECT_LOCALITY", 1 << 3),
];

/// `hwloc_utils_parse_flags`: a number, `none`, or flag names (any unambiguous substring, `$`
/// anchoring at the end) separated by `,`, `|` or `+`. A failure gives `u64::MAX` and the lines
/// hwloc prints about it.
pub fn parse_flags(s: &str, names: &[FlagName], kind: &str) -> (u64, Vec<Message>) {
    let (value, used) = strtoul(s.as_bytes(), 0);
    if used > 0 && used == s.len() {
        // hwloc keeps the number in an int before returning it as unsigned long.
        return ((value as i32) as i64 as u64, Vec::new());
    }
    let upper = s.to_ascii_uppercase();
    if upper == "NONE" {
        return (0, Vec::new());
    }
    let failure = |first: String| {
        let mut msgs = vec![
            Message::Stderr(first),
            Message::Stderr(format!("Supported {kind} flags are substrings of:")),
        ];
        msgs.extend(names.iter().map(|(n, _)| Message::Stderr(format!("  {n}"))));
        (u64::MAX, msgs)
    };
    let mut flags = 0;
    let mut rest = upper.as_str();
    loop {
        rest = rest.trim_start_matches([',', '|', '+']);
        let len = rest.find([' ', ',', '|', '+']).unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        let mut token = &rest[..len];
        let anchored = token.contains('$');
        if let Some(d) = token.find('$') {
            token = &token[..d];
        }
        let before = flags;
        let mut count = 0;
        for (name, value) in names {
            let hit = if anchored {
                name.ends_with(token)
            } else {
                name.contains(token)
            };
            if !hit {
                continue;
            }
            if count > 0 {
                return failure(format!("Duplicate match for {kind} flag `{token}'."));
            }
            flags |= value;
            count += 1;
        }
        if flags == before {
            return failure(format!("Failed to parse {kind} flag `{token}'."));
        }
        if len == rest.len() {
            break;
        }
        rest = &rest[len + 1..];
    }
    (flags, Vec::new())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn flags_parse_as_hwloc_utils_parse_flags() {
        assert_eq!(parse_flags("3", LOCAL_NUMANODE_FLAGS, "x").0, 3);
        assert_eq!(parse_flags("none", LOCAL_NUMANODE_FLAGS, "x").0, 0);
        assert_eq!(
            parse_flags("smaller,larger", LOCAL_NUMANODE_FLAGS, "x").0,
            3
        );
        // `ALL` is also in `SMALLER`: ambiguous, as hwloc-calc says; `all$` and `flag_all` work.
        assert_eq!(parse_flags("all", LOCAL_NUMANODE_FLAGS, "x").0, u64::MAX);
        assert_eq!(parse_flags("all$", LOCAL_NUMANODE_FLAGS, "x").0, 4);
        assert_eq!(parse_flags("flag_all", LOCAL_NUMANODE_FLAGS, "x").0, 4);
        assert_eq!(parse_flags("bynodeset|memless", RESTRICT_FLAGS, "x").0, 24);
        let (v, msgs) = parse_flags("locality", LOCAL_NUMANODE_FLAGS, "local_numanode");
        assert_eq!(v, u64::MAX);
        assert_eq!(
            msgs[0],
            Message::Stderr("Duplicate match for local_numanode flag `LOCALITY'.".to_owned())
        );
        assert_eq!(parse_flags("bogus", RESTRICT_FLAGS, "x").0, u64::MAX);
        assert_eq!(parse_flags("-1", RESTRICT_FLAGS, "x").0, u64::MAX);
        assert_eq!(parse_flags("IO$", RESTRICT_FLAGS, "x").0, 4);
    }
}
