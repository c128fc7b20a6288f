//! Numeric option values (`--runs`, `--warmup`, `--timeout`, `--tolerance`, `run --threads`):
//! parsed with a message that says what the option takes ("give a whole number ≥ 1"), negative
//! numbers included. An option that takes one sets `allow_negative_numbers`, so that clap hands
//! `-1` to the parser instead of reading it as an unknown flag and advising `-- -1` (wrong for
//! `tune` and `run`, where `--` starts the command). `main` prints such an error as coretune's
//! other errors are, one line: `coretune: --runs -1: give a whole number ≥ 1` ([`one_line`]).

use clap::builder::{StringValueParser, TypedValueParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// What a numeric option takes, said when its value is not that.
#[derive(Debug)]
pub(crate) struct Wanted(String);

impl std::fmt::Display for Wanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Wanted {}

/// A clap error about a numeric option's value as one line (`--runs -1: give a whole number
/// ≥ 1`); `None` for every other error, which clap prints itself.
pub(crate) fn one_line(err: &clap::Error) -> Option<String> {
    if err.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let wanted = std::error::Error::source(err)?.downcast_ref::<Wanted>()?;
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    // `--runs <N>`: the option's name.
    let arg = text(ContextKind::InvalidArg)?;
    let option = arg.split_whitespace().next().unwrap_or(&arg).to_owned();
    let value = text(ContextKind::InvalidValue)?;
    Some(format!("{option} {value}: {wanted}"))
}

/// A whole number from `min` to `max` (`usize::MAX`: no upper bound).
pub(crate) fn whole(min: usize, max: usize) -> impl TypedValueParser<Value = usize> {
    StringValueParser::new().try_map(move |text: String| {
        let wanted = if max == usize::MAX {
            format!("give a whole number ≥ {min}")
        } else {
            format!("give a whole number from {min} to {max}")
        };
        match text.trim().parse::<usize>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(Wanted(wanted)),
        }
    })
}

/// A number of seconds, above 0 and small enough for a `Duration`.
pub(crate) fn seconds() -> impl TypedValueParser<Value = f64> {
    StringValueParser::new().try_map(|text: String| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|&s| std::time::Duration::try_from_secs_f64(s).is_ok_and(|d| !d.is_zero()))
            .ok_or_else(|| Wanted("give a positive number of seconds".to_owned()))
    })
}

/// A number of seconds, 0 or more and small enough for a `Duration`.
pub(crate) fn seconds_or_zero() -> impl TypedValueParser<Value = f64> {
    StringValueParser::new().try_map(|text: String| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|&s| std::time::Duration::try_from_secs_f64(s).is_ok())
            .ok_or_else(|| Wanted("give a number of seconds, 0 or more".to_owned()))
    })
}

/// A percentage, at least 0 and below 100.
pub(crate) fn percent() -> impl TypedValueParser<Value = f64> {
    StringValueParser::new().try_map(|text: String| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|p| (0.0..100.0).contains(p))
            .ok_or_else(|| Wanted("give a percentage from 0 to 100".to_owned()))
    })
}

#[cfg(test)]
mod test {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[arg(long, allow_negative_numbers = true, value_parser = whole(1, usize::MAX))]
        runs: Option<usize>,
        #[arg(long, allow_negative_numbers = true, value_parser = whole(1, 8))]
        threads: Option<usize>,
        #[arg(long, allow_negative_numbers = true, value_parser = seconds())]
        timeout: Option<f64>,
        #[arg(long, allow_negative_numbers = true, value_parser = seconds_or_zero())]
        min_time: Option<f64>,
        #[arg(long, allow_negative_numbers = true, value_parser = percent())]
        tolerance: Option<f64>,
    }

    fn error(args: &[&str]) -> String {
        let err =
            Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap_err();
        one_line(&err).unwrap_or_else(|| err.to_string())
    }

    #[test]
    fn negative_and_out_of_range_numbers_say_what_the_option_takes_in_one_line() {
        for (args, want) in [
            (["--runs", "-1"], "give a whole number ≥ 1"),
            (["--runs", "0"], "give a whole number ≥ 1"),
            (["--runs", "x"], "give a whole number ≥ 1"),
            (["--threads", "9"], "give a whole number from 1 to 8"),
            (["--timeout", "-1"], "give a positive number of seconds"),
            (["--timeout", "0"], "give a positive number of seconds"),
            (["--timeout", "1e30"], "give a positive number of seconds"),
            (
                ["--min-time", "-0.5"],
                "give a number of seconds, 0 or more",
            ),
            (["--tolerance", "-1"], "give a percentage from 0 to 100"),
            (["--tolerance", "100"], "give a percentage from 0 to 100"),
        ] {
            let err = error(&args);
            assert!(
                err.starts_with(&format!("{} {}: ", args[0], args[1])),
                "{args:?}: {err}"
            );
            assert!(err.ends_with(want), "{args:?}: {err}");
        }
        let ok = Cli::try_parse_from(["t", "--runs", "3", "--min-time", "0", "--tolerance", "2.5"])
            .unwrap();
        assert_eq!(
            (ok.runs, ok.min_time, ok.tolerance),
            (Some(3), Some(0.0), Some(2.5))
        );
        // Other errors are clap's own.
        let other = Cli::try_parse_from(["t", "--bogus"]).unwrap_err();
        assert!(one_line(&other).is_none());
    }
}
