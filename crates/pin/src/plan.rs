//! The plan in `CORETUNE_PIN` (its format is in the crate documentation), parsed once (in the
//! constructor, where allocating is fine) into CPU masks in the kernel's layout.

/// The highest CPU number a plan may name, plus one: far past any machine, small enough that a
/// typo cannot make the constructor allocate much.
pub(crate) const MAX_CPUS: usize = 1 << 16;

/// Bits in one word of a kernel CPU mask.
pub(crate) const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// The smallest mask handed to the kernel: glibc's `cpu_set_t` (1024 CPUs).
const MIN_WORDS: usize = 1024 / WORD_BITS;

/// A parsed plan.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Each place's CPUs, ascending.
    pub(crate) places: Vec<Vec<usize>>,
    /// The skip mask, when the plan gives one (`None`: `auto`, the OpenMP runtime's default).
    pub(crate) skip: Option<u64>,
}

impl Plan {
    /// Words per mask: enough for the highest CPU of any place, at least a `cpu_set_t`.
    pub(crate) fn words(&self) -> usize {
        let top = self.places.iter().flatten().copied().max().unwrap_or(0);
        (top / WORD_BITS + 1).max(MIN_WORDS)
    }

    /// Every place's mask, `words` words each, one after another.
    pub(crate) fn masks(&self, words: usize) -> Vec<libc::c_ulong> {
        let mut out = vec![0; words * self.places.len()];
        for (i, place) in self.places.iter().enumerate() {
            for &cpu in place {
                out[i * words + cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
            }
        }
        out
    }
}

/// Parses the text of `CORETUNE_PIN`.
pub(crate) fn parse(text: &str) -> Result<Plan, String> {
    let mut places = None;
    let mut skip = None;
    for item in text.split_ascii_whitespace() {
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| format!("'{item}' is not key=value"))?;
        match key {
            "places" if places.is_none() => places = Some(parse_places(value)?),
            "skip" if skip.is_none() => skip = Some(parse_skip(value)?),
            "places" | "skip" => return Err(format!("'{key}' is given twice")),
            _ => return Err(format!("unknown key '{key}' (known: places, skip)")),
        }
    }
    Ok(Plan {
        places: places.ok_or("no places= item")?,
        skip: skip.flatten(),
    })
}

fn parse_places(value: &str) -> Result<Vec<Vec<usize>>, String> {
    value
        .split('/')
        .map(|place| parse_list(place).map_err(|e| format!("place '{place}': {e}")))
        .collect()
}

/// A kernel CPU list (`0-3,8`), sorted and without repeats; never empty.
fn parse_list(text: &str) -> Result<Vec<usize>, String> {
    let cpu = |s: &str| -> Result<usize, String> {
        match s.parse::<usize>() {
            Ok(c) if c < MAX_CPUS => Ok(c),
            Ok(_) => Err(format!(
                "CPU {s} is past the last CPU a plan may name ({MAX_CPUS})"
            )),
            Err(_) => Err(format!("'{s}' is not a CPU number")),
        }
    };
    let mut cpus = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (cpu(a)?, cpu(b)?);
                if b < a {
                    return Err(format!("range '{part}' goes downwards"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(cpu(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// `0x` + hex digits (likwid-pin's `-s`), or `auto`.
fn parse_skip(value: &str) -> Result<Option<u64>, String> {
    if value == "auto" {
        return Ok(None);
    }
    let hex = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
        .ok_or_else(|| format!("skip mask '{value}' must be hex starting with 0x, or auto"))?;
    u64::from_str_radix(hex, 16)
        .map(Some)
        .map_err(|_| format!("skip mask '{value}' is not a 64-bit hex number"))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn places_and_skip() {
        let plan = parse("places=0/2/3,1,1-2 skip=0x5").unwrap();
        assert_eq!(plan.places, vec![vec![0], vec![2], vec![1, 2, 3]]);
        assert_eq!(plan.skip, Some(5));
        assert_eq!(parse("  places=7  ").unwrap().skip, None);
        assert_eq!(parse("skip=auto places=0").unwrap().skip, None);
    }

    #[test]
    fn masks_in_kernel_layout() {
        let plan = parse("places=0/65,1").unwrap();
        let words = plan.words();
        assert_eq!(words, 1024 / WORD_BITS);
        let masks = plan.masks(words);
        assert_eq!(masks[0], 1);
        assert_eq!(
            masks[words + 65 / WORD_BITS] & (1 << (65 % WORD_BITS)),
            1 << (65 % WORD_BITS)
        );
        assert_eq!(masks[words], 2);
        let big = parse("places=4095").unwrap();
        assert_eq!(big.words(), 4096 / WORD_BITS);
    }

    #[test]
    fn bad_plans_say_what() {
        for (text, why) in [
            ("", "no places= item"),
            ("places=", "place '': '' is not a CPU number"),
            ("places=0//1", "place '': '' is not a CPU number"),
            ("places=3-1", "goes downwards"),
            ("places=70000", "past the last CPU"),
            ("places=0 skip=5", "must be hex starting with 0x"),
            (
                "places=0 skip=0x10000000000000000",
                "not a 64-bit hex number",
            ),
            ("places=0 places=1", "given twice"),
            ("places=0 cpus=1", "unknown key 'cpus'"),
            ("places", "not key=value"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
