//! Who this process is, and user names (the password database, through nix).

use crate::sys::error::SysError;

/// This process's effective uid: the one permission checks use.
pub(crate) fn effective_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The uid of user `name`, `None` when there is no such user.
pub(crate) fn user_id(name: &str) -> Result<Option<u32>, SysError> {
    nix::unistd::User::from_name(name)
        .map(|u| u.map(|u| u.uid.as_raw()))
        .map_err(|e| SysError::Call {
            call: "getpwnam_r",
            error: e.into(),
        })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn root_is_uid_0() {
        assert_eq!(user_id("root").unwrap(), Some(0));
        assert_eq!(user_id("no-such-user-coretune").unwrap(), None);
    }
}
