//! hwloc's bitmap strings, read and written exactly as libhwloc 2.9 does (`bitmap.c`): the hwloc
//! format (`0xf...f,0x000000ff,,0x00000001`: 32-bit words, most significant first, an infinite
//! set starting with `0xf...f`), the taskset format (`0xff`), the list format (`0-3,8`, `5-` for
//! an infinite tail) and, from hwloc 2.11, systemd's D-Bus `ay` byte array.
//!
//! What these print depends on the set only, seen as libhwloc stores it on LP64: 64-bit words,
//! plus a flag saying every bit past the last word is set. [`Words`] is that view.

use hwlocality::bitmap::Bitmap;

use super::cnum::strtoul;
use crate::sys::format_list;

/// A bitmap as libhwloc stores it on LP64: 64-bit words, least significant first, and whether
/// every bit past them is set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Words {
    pub(crate) words: Vec<u64>,
    pub(crate) infinite: bool,
}

impl Words {
    /// The words of `set`, up to its last set bit (finite) or last unset bit (infinite).
    pub(crate) fn of(set: &Bitmap) -> Self {
        let infinite = set.weight().is_none();
        let top = if infinite {
            set.last_unset().map_or(0, |i| usize::from(i) + 1)
        } else {
            set.last_set().map_or(0, |i| usize::from(i) + 1)
        };
        let mut words = vec![0u64; top.div_ceil(64)];
        let end = words.len() * 64;
        for bit in set.iter_set().map(usize::from).take_while(|&b| b < end) {
            words[bit / 64] |= 1 << (bit % 64);
        }
        Self { words, infinite }
    }

    /// The bitmap these words describe.
    pub(crate) fn to_bitmap(&self) -> Bitmap {
        let mut set = Bitmap::new();
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let bit = w.trailing_zeros() as usize;
                set.set(i * 64 + bit);
                w &= w - 1;
            }
        }
        if self.infinite {
            set.set_range(self.words.len() * 64..);
        }
        set
    }
}

/// `hwloc_bitmap_asprintf`: hwloc's own format.
pub fn hwloc_string(set: &Bitmap) -> String {
    let Words { words, infinite } = Words::of(set);
    let mut out = String::new();
    let mut needcomma = false;
    if infinite {
        out.push_str("0xf...f");
        needcomma = true;
    }
    let mut i = words.len() as isize - 1;
    let skip = if infinite { u64::MAX } else { 0 };
    while i >= 0 && words[i as usize] == skip {
        i -= 1;
    }
    let mut accum: u64 = 0;
    let mut accumed = 0;
    while i >= 0 || accumed > 0 {
        if accumed == 0 {
            accum = words[i as usize];
            i -= 1;
            accumed = 64;
        }
        let high = accum >> 32;
        if high != 0 {
            if needcomma {
                out.push(',');
            }
            out.push_str(&format!("0x{high:08x}"));
            needcomma = true;
        } else if i == -1 && accumed == 32 {
            out.push_str(if needcomma { ",0x0" } else { "0x0" });
        } else if needcomma {
            out.push(',');
        }
        accum <<= 32;
        accumed -= 32;
    }
    if out.is_empty() {
        out.push_str("0x0");
    }
    out
}

/// `hwloc_bitmap_taskset_asprintf`: one hex number, as `taskset` takes it.
pub(crate) fn taskset_string(set: &Bitmap) -> String {
    let Words { words, infinite } = Words::of(set);
    let mut out = String::new();
    let mut started = false;
    if infinite {
        out.push_str("0xf...f");
        started = true;
    }
    let mut i = words.len() as isize - 1;
    if infinite {
        while i >= 0 && words[i as usize] == u64::MAX {
            i -= 1;
        }
    } else {
        while i >= 1 && words[i as usize] == 0 {
            i -= 1;
        }
    }
    while i >= 0 {
        let val = words[i as usize];
        i -= 1;
        if started {
            out.push_str(&format!("{val:016x}"));
        } else if val != 0 || i == -1 {
            out.push_str(&format!("0x{val:x}"));
            started = true;
        }
    }
    if out.is_empty() {
        out.push_str("0x0");
    }
    out
}

/// hwloc ≥ 2.10's reading of an infinite bitmap (`0xf...f,abcd00`, `0xf...ff00`): every bit
/// above the digits written is set, where 2.9 sets those above the next 64-bit word only.
pub(crate) fn widen_infinite(arg: &str, format: Option<BitmapFormat>, set: &mut Bitmap) {
    let lower = arg.to_ascii_lowercase();
    let width = match format {
        Some(BitmapFormat::Hwloc) => lower
            .strip_prefix("0xf...f,")
            .map(|rest| 32 * rest.split(',').count()),
        Some(BitmapFormat::Taskset) => lower
            .strip_prefix("0xf...f")
            .filter(|rest| !rest.is_empty())
            .map(|rest| 4 * rest.len()),
        _ => None,
    };
    if let Some(width) = width {
        set.set_range(width..);
    }
}

/// hwloc ≥ 2.10's rendering (`--cof`): an infinite set's tail starts right above its highest
/// unset bit, and the words below it are written whole (32 bits each, as taskset's digits
/// too): `0xf...f,0xfffffff8`, `0xf...f00000001`. Finite sets are written as 2.9 writes them.
pub(crate) fn render_newer(format: BitmapFormat, set: &Bitmap) -> Option<String> {
    let Some(top) = set.last_unset().filter(|_| set.weight().is_none()) else {
        return format.render(set);
    };
    let words = usize::from(top) / 32 + 1;
    let word = |w: usize| -> u32 {
        (0..32).fold(0u32, |acc, b| {
            if set.is_set(w * 32 + b) {
                acc | (1 << b)
            } else {
                acc
            }
        })
    };
    match format {
        BitmapFormat::Hwloc => {
            let mut out = String::from("0xf...f");
            for w in (0..words).rev() {
                let value = word(w);
                if value != 0 {
                    out.push_str(&format!(",0x{value:08x}"));
                } else if w == 0 {
                    out.push_str(",0x0");
                } else {
                    out.push(',');
                }
            }
            Some(out)
        }
        BitmapFormat::Taskset => {
            let mut out = String::from("0xf...f");
            for w in (0..words).rev() {
                out.push_str(&format!("{:08x}", word(w)));
            }
            Some(out)
        }
        _ => format.render(set),
    }
}

/// `hwloc_bitmap_list_asprintf`: `0-3,8`, with `N-` for an infinite tail (empty for no bit).
pub(crate) fn list_string(set: &Bitmap) -> String {
    // An infinite set has every bit from just past its last unset one on: `N-`.
    let tail = set
        .weight()
        .is_none()
        .then(|| set.last_unset().map_or(0, |i| usize::from(i) + 1));
    let finite: Vec<usize> = set
        .iter_set()
        .map(usize::from)
        .take_while(|&b| tail.is_none_or(|t| b < t))
        .collect();
    let mut out = format_list(&finite);
    if let Some(t) = tail {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&format!("{t}-"));
    }
    out
}

/// systemd's D-Bus `AllowedCPUs`/`AllowedMemoryNodes` value (hwloc 2.11's `systemd-dbus-api`
/// output format): `ay 0xNNNN 0xAA 0xBB ...`, the mask's bytes least significant first. `None`
/// for an empty or infinite set, which the format cannot express.
pub(crate) fn systemd_dbus_string(set: &Bitmap) -> Option<String> {
    if set.weight().is_none_or(|w| w == 0) {
        return None;
    }
    let last = usize::from(set.last_set()?);
    let bytes = last / 8 + 1;
    let Words { words, .. } = Words::of(set);
    let mut out = format!("ay 0x{bytes:04x}");
    for byte in 0..bytes {
        let value = (words[byte / 8] >> (8 * (byte % 8))) & 0xff;
        out.push_str(&format!(" 0x{value:02x}"));
    }
    Some(out)
}

/// Where hwloc-calc 2.9 dies on this input instead of answering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Assertion {
    /// libhwloc fails an assertion (a hwloc-format string whose first word is empty, such as
    /// `,0x1`) and the program dies with SIGABRT; the message is the assertion's.
    Abort(&'static str),
    /// The program dereferences a null pointer and dies with SIGSEGV; the message says where.
    Crash(&'static str),
}

/// `hwloc_bitmap_sscanf`: the set (zeroed on a parse failure) and whether it parsed.
pub(crate) fn parse_hwloc(s: &str) -> Result<(Bitmap, bool), Assertion> {
    let b = s.as_bytes();
    // hwloc counts the words by the commas after the first character.
    let mut count: i64 = 1 + b.iter().skip(1).filter(|&&c| c == b',').count() as i64;
    let mut current = 0;
    let mut infinite = false;
    if b.starts_with(b"0xf...f") {
        current = 7;
        if b.get(current) != Some(&b',') {
            return Ok((Bitmap::full(), true));
        }
        current += 1;
        infinite = true;
        count -= 1;
    }
    let ulongs = usize::try_from((count + 1) / 2).unwrap_or(0);
    let mut words = vec![0u64; ulongs];
    let mut accum: u64 = 0;
    while current < b.len() {
        let (val, used) = strtoul(&b[current..], 16);
        let next = current + used;
        if count <= 0 {
            return Err(Assertion::Abort(
                "bitmap.c:395: hwloc_bitmap_sscanf: Assertion `count > 0' failed.",
            ));
        }
        count -= 1;
        accum |= val << ((count * 32) % 64);
        if count % 2 == 0 {
            words[(count / 2) as usize] = accum;
            accum = 0;
        }
        if b.get(next) != Some(&b',') {
            if next < b.len() || count > 0 {
                return Ok((Bitmap::new(), false));
            }
            break;
        }
        current = next + 1;
    }
    Ok((Words { words, infinite }.to_bitmap(), true))
}

/// `hwloc_bitmap_taskset_sscanf`: the set (zeroed on a parse failure) and whether it parsed.
pub(crate) fn parse_taskset(s: &str) -> (Bitmap, bool) {
    let b = s.as_bytes();
    let mut current = 0;
    let mut infinite = false;
    if b.starts_with(b"0xf...f") {
        infinite = true;
        current = 7;
        if current == b.len() {
            return (Bitmap::full(), true);
        }
    } else {
        if b.starts_with(b"0x") {
            current = 2;
        }
        if current == b.len() {
            return (Bitmap::new(), true);
        }
    }
    let mut chars = b.len() - current;
    let mut count = (chars * 4).div_ceil(64);
    let mut words = vec![0u64; count];
    while current < b.len() {
        let mut take = chars % 16;
        if take == 0 {
            take = 16;
        }
        let chunk = &b[current..current + take];
        let (val, used) = strtoul(chunk, 16);
        if used != chunk.len() {
            return (Bitmap::new(), false);
        }
        words[count - 1] = val;
        current += take;
        chars -= take;
        count -= 1;
    }
    (Words { words, infinite }.to_bitmap(), true)
}

/// The largest bit index a list may name before hwloc would have to allocate gigabytes; past it
/// the list is refused as unparsable.
const LIST_MAX_BIT: u64 = 1 << 24;

/// `hwloc_bitmap_list_sscanf`: the set (zeroed on a parse failure) and whether it parsed. Not the
/// kernel's list format (`crate::sys`'s `parse_list`, strict, for `/sys` and cgroup files): this
/// one reads numbers as C's `strtoul` with base 0 does (`0x10`, `010`), skips spaces, takes `N-`
/// as an infinite tail and ignores a reversed range, as hwloc-calc's `--cif list` does.
pub(crate) fn parse_list(s: &str) -> (Bitmap, bool) {
    let b = s.as_bytes();
    let mut set = Bitmap::new();
    let mut current = 0;
    let mut begin: Option<u64> = None;
    let failed = || (Bitmap::new(), false);
    while current < b.len() {
        while current < b.len() && (b[current] == b',' || b[current] == b' ') {
            current += 1;
        }
        let (val, used) = strtoul(&b[current..], 0);
        if used == 0 {
            return failed();
        }
        let next = current + used;
        if val > LIST_MAX_BIT {
            return failed();
        }
        let val_idx = val as usize;
        if let Some(start) = begin.take() {
            if start <= val {
                set.set_range(start as usize..=val_idx);
            }
        } else if b.get(next) == Some(&b'-') {
            if next + 1 == b.len() {
                set.set_range(val_idx..);
                break;
            }
            begin = Some(val);
        } else if matches!(b.get(next), Some(b',' | b' ') | None) {
            set.set(val_idx);
        }
        if next >= b.len() {
            break;
        }
        current = next + 1;
    }
    (set, true)
}

/// How a bitmap is written (`--cpuset-output-format`, `--taskset`) or read (`--cif`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BitmapFormat {
    /// hwloc's format: `0x000000ff,0x00000001`.
    #[default]
    Hwloc,
    /// A list: `0-7,32`.
    List,
    /// taskset's format: `0xff00000001`.
    Taskset,
    /// systemd's D-Bus API: `ay 0x0001 0x03` (output only).
    SystemdDbusApi,
}

impl BitmapFormat {
    /// hwloc's names: `hwloc`, `list`, `taskset`, `systemd-dbus-api`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "hwloc" => Self::Hwloc,
            "list" => Self::List,
            "taskset" => Self::Taskset,
            "systemd-dbus-api" => Self::SystemdDbusApi,
            _ => return None,
        })
    }

    /// The set in this format; `None` where the format cannot express it (an empty or infinite
    /// set in systemd's).
    pub fn render(self, set: &Bitmap) -> Option<String> {
        match self {
            Self::Hwloc => Some(hwloc_string(set)),
            Self::List => Some(list_string(set)),
            Self::Taskset => Some(taskset_string(set)),
            Self::SystemdDbusApi => systemd_dbus_string(set),
        }
    }
}

/// Reads a bitmap in hwloc's format; `None` where hwloc fails to (or would abort).
pub(crate) fn parse_hwloc_bitmap_checked(s: &str) -> Option<Bitmap> {
    match parse_hwloc(s) {
        Ok((set, true)) => Some(set),
        _ => None,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn hw(s: &str) -> String {
        hwloc_string(&parse_hwloc(s).unwrap().0)
    }

    #[test]
    fn hwloc_format_round_trips_as_hwloc_calc_prints_it() {
        // Outputs of hwloc-calc 2.9 for these inputs.
        assert_eq!(hw("1,,3"), "0x00000001,,0x00000003");
        assert_eq!(hw("0xf...f,0x1,0x2"), "0xf...f,0x00000001,0x00000002");
        assert_eq!(hw("ff,ff"), "0x000000ff,0x000000ff");
        assert_eq!(hw("0X1,2"), "0x00000001,0x00000002");
        assert_eq!(
            hw("0xf...f,0xffffffff,0xfffffff0"),
            "0xf...f,0xffffffff,0xfffffff0"
        );
        assert_eq!(hw("0xf...f,0x000000f0"), "0xf...f,,0x000000f0");
        assert_eq!(hw("0x1,"), "0x0");
        assert_eq!(hw("0xF...F,1"), "0x0");
        assert_eq!(hw("0xf...f"), "0xf...f");
        assert_eq!(hw("0xf...f,0x80000000,,,,,"), "0xf...f,0x80000000,,,,,0x0");
        assert!(parse_hwloc(",0x1").is_err());
        assert_eq!(hwloc_string(&Bitmap::new()), "0x0");
    }

    #[test]
    fn taskset_and_list_formats() {
        let (set, ok) = parse_taskset("0x0000000000000000000000ff");
        assert!(ok);
        assert_eq!(hwloc_string(&set), "0x000000ff");
        assert_eq!(taskset_string(&set), "0xff");
        let (set, _) = parse_hwloc("1,3,5").unwrap();
        assert_eq!(taskset_string(&set), "0x10000000300000005");
        assert_eq!(taskset_string(&Bitmap::new()), "0x0");
        assert_eq!(taskset_string(&Bitmap::full()), "0xf...f");
        let (set, ok) = parse_list("0,31-32,63-64,77");
        assert!(ok);
        assert_eq!(list_string(&set), "0,31-32,63-64,77");
        assert_eq!(
            systemd_dbus_string(&set).unwrap(),
            "ay 0x000a 0x01 0x00 0x00 0x80 0x01 0x00 0x00 0x80 0x01 0x20"
        );
        let (set, _) = parse_list("3-");
        assert_eq!(list_string(&set), "3-");
        // The finite part and the infinite tail, and a tail that swallows a run before it.
        assert_eq!(list_string(&parse_list("0-3,64-").0), "0-3,64-");
        assert_eq!(list_string(&parse_list("0-3,60-63,64-").0), "0-3,60-");
        assert_eq!(list_string(&Bitmap::full()), "0-");
        assert_eq!(list_string(&Bitmap::new()), "");
        assert_eq!(systemd_dbus_string(&set), None);
        assert!(!parse_list("x").1);
        assert!(!parse_taskset("0xzz").1);
    }
}
