//! Option values that are one of a list the core library defines (`--place`, `--bind`, `--to`,
//! `--size`): parsed by the type's own `FromStr`, so its aliases (`rr`, `close`, `hex`…) and its
//! error messages stay, and listed to clap as possible values, so `--help` shows them and the
//! completion scripts offer them instead of file names. Values that are suggestions rather than
//! the only ones (a workload's name, `--objective`, `--metric-from`) are [`offered`].

use std::ffi::OsStr;
use std::fmt::Display;
use std::marker::PhantomData;
use std::str::FromStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};

/// A value parser for `T` that offers the names of `all` (see the module docs).
pub(crate) fn one_of<T>(all: impl IntoIterator<Item = T>) -> OneOf<T>
where
    T: Display,
{
    OneOf {
        names: all.into_iter().map(|value| value.to_string()).collect(),
        value: PhantomData,
    }
}

/// See [`one_of`].
#[derive(Clone, Debug)]
pub(crate) struct OneOf<T> {
    names: Vec<String>,
    value: PhantomData<fn() -> T>,
}

impl<T> TypedValueParser for OneOf<T>
where
    T: FromStr + Clone + Send + Sync + 'static,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        // clap's own parser for `FromStr` types, so the errors read as every other option's.
        StringValueParser::new()
            .try_map(|text| text.parse::<T>())
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.names
                .iter()
                .map(|name| PossibleValue::new(name.clone())),
        ))
    }
}

/// A value parser that takes any text and offers `values` (name, what it is) in completions:
/// for options whose names are suggestions, not the only values (a workload's name checked
/// later with its own message, an objective that may also be a metric's name, `stdout` or a
/// file). Their help lists them only where the option's own text does.
pub(crate) fn offered(values: &[(&'static str, &'static str)]) -> Offered {
    Offered {
        values: values.to_vec(),
    }
}

/// [`offered`] for the built-in workloads, by name (checked later, with the list in the error).
pub(crate) fn workloads() -> Offered {
    Offered {
        values: coretune_core::workload::NAMES
            .iter()
            .map(|&name| (name, ""))
            .collect(),
    }
}

/// See [`offered`].
#[derive(Clone, Debug)]
pub(crate) struct Offered {
    values: Vec<(&'static str, &'static str)>,
}

impl TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.values.iter().map(
            |&(name, help)| match help {
                "" => PossibleValue::new(name),
                help => PossibleValue::new(name).help(help),
            },
        )))
    }
}

#[cfg(test)]
mod test {
    use clap::Parser;
    use coretune_core::placement::Policy;

    use super::one_of;

    #[derive(Debug, Parser)]
    struct Cli {
        #[arg(long, value_parser = one_of(Policy::ALL))]
        place: Policy,
    }

    #[test]
    fn aliases_parse_and_names_are_offered() {
        let cli = Cli::try_parse_from(["t", "--place", "rr"]).unwrap();
        assert_eq!(cli.place, Policy::RoundRobin);
        let err = Cli::try_parse_from(["t", "--place", "diagonal"]).unwrap_err();
        assert!(
            err.to_string()
                .contains("unknown placement policy 'diagonal'"),
            "{err}"
        );
        let help = Cli::try_parse_from(["t", "--help"])
            .unwrap_err()
            .to_string();
        assert!(
            help.contains("[possible values: os, compact, spread, cores, round-robin]"),
            "{help}"
        );
    }
}
