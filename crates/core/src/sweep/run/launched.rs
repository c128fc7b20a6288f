//! One run of a program under an MPI launcher (`--launcher mpirun|srun`): the launcher's
//! command line for the configuration before the program's, run and timed as one program.

use super::runner::{Runner, Started};
use crate::grid::{Config, Family};
use crate::sweep::{Launcher, Outcome};

impl Runner<'_> {
    /// One run of a program under `launcher` (`--launcher`): the launcher's command line for
    /// `c` before the program's, started once on the configuration's CPUs (the launcher maps and
    /// binds its ranks within them) and timed whole, as one program's run.
    pub(super) fn run_launched(
        &self,
        launcher: Launcher,
        argv: &[String],
        shell: bool,
        prepare: Option<&str>,
        c: &Config,
        started: &mut Started,
    ) -> Outcome {
        let mut words = match launcher.words(self.topology, c) {
            Ok(w) => w,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        // What each rank gets, for the audit (Open MPI's ranks are the launcher's descendants;
        // Slurm's tasks run under slurmd, out of coretune's sight).
        if launcher == Launcher::Mpirun {
            match launcher.expected(self.topology, c) {
                Ok(ranks) => started.ranks = Some(ranks),
                Err(e) => return Outcome::Failed(e.to_string()),
            }
        }
        if shell {
            words.extend(["sh".to_owned(), "-c".to_owned(), argv.join(" ")]);
        } else {
            words.extend(argv.iter().cloned());
        }
        let whole = Family {
            place: crate::placement::Policy::Os,
            instances: 1,
            ..c.family.clone()
        }
        .at(c.threads);
        let placement = match whole.placement(self.topology, self.settings.binding) {
            Ok(p) => p,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        self.run_command(&words, false, prepare, c, &[placement], &[None], started)
    }
}
