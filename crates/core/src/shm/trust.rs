//! Whether a store file may be trusted before it is mapped: a planted
//! file (another local user's, or a link to one) could otherwise read
//! every metric, or hang every writer through its lock word.
//!
//! The rules (docs/exporter.md, "Security"):
//! - the path is opened with `O_NOFOLLOW`: a symbolic link in its last
//!   component is refused, and so is anything but a regular file;
//! - the owner is this process's effective user, root, or the user the
//!   options name ([`Trust::owner`]); a reader also accepts any owner
//!   when the file's group is the group the options name;
//! - a writer refuses a file that others may write, and one that its
//!   group may write unless the options name that group (or ask for a
//!   group-writable store, mode 0660, and the group is this process's
//!   effective group);
//! - nobody accepts a file that every user may write.

use std::ffi::{c_char, CStr};
use std::fs::Metadata;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Who, besides this process's user and root, may own or write a store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Trust {
    /// Another user that may own the file.
    pub owner: Option<u32>,
    /// A group that may own the file and write to it.
    pub group: Option<u32>,
    /// The opener asked for a group-writable store (mode 0660): its own
    /// effective group may write.
    pub own_group_writes: bool,
}

impl Trust {
    /// Checks an open file's metadata (from `fstat`, so it is the file
    /// that will be mapped) against the rules.
    pub fn check(&self, meta: &Metadata, writable: bool, path: &Path) -> Result<()> {
        let untrusted = |msg: String| Err(Error::new(ErrorKind::Untrusted, msg).with_path(path));
        if !meta.file_type().is_file() {
            return untrusted(format!(
                "it is {}, not a regular file; was it planted there? \
                 remove it, or give the path of the real store",
                file_type_name(meta)
            ));
        }
        let (uid, gid, mode) = (meta.uid(), meta.gid(), meta.mode() & 0o7777);
        let me = effective_uid();
        let group_named = self.group == Some(gid);
        let owner_ok = uid == me || uid == 0 || self.owner == Some(uid);
        // A reader told the group accepts the group's stores.
        let reader_by_group = group_named && !writable;
        if !owner_ok && !reader_by_group {
            return untrusted(format!(
                "it is owned by {} (mode {mode:04o}), not by this process's user {} or root; \
                 if that owner is expected, name it (Options::owner, shmetrics_options.owner, \
                 shmetrics serve --store.owner)",
                describe_user(uid),
                describe_user(me)
            ));
        }
        let others = mode & 0o002 != 0;
        let group =
            mode & 0o020 != 0 && !group_named && !(self.own_group_writes && gid == effective_gid());
        if others || (writable && group) {
            return untrusted(format!(
                "it is owned by {} and group {} with mode {mode:04o}: {} may write it, and \
                 so hang or corrupt this process's writes; make it 0600 (or 0660 for a \
                 trusted group), or name that group (Options::group, \
                 shmetrics_options.group, shmetrics serve --store.group)",
                describe_user(uid),
                describe_group(gid),
                if others {
                    "every user"
                } else {
                    "every member of the group"
                }
            ));
        }
        Ok(())
    }
}

fn file_type_name(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

/// `name (uid N)`, or `uid N` for a user the user database does not know.
fn describe_user(uid: u32) -> String {
    match user_name(uid) {
        Some(name) => format!("user {name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

fn describe_group(gid: u32) -> String {
    match group_name(gid) {
        Some(name) => format!("{name} (gid {gid})"),
        None => format!("gid {gid}"),
    }
}

pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

pub(crate) fn effective_gid() -> u32 {
    // SAFETY: getegid(2) has no arguments and cannot fail.
    unsafe { libc::getegid() }
}

/// Runs a reentrant user-database call (`getpwnam_r` and the like) with a
/// buffer that grows while the call answers `ERANGE`.
fn with_buffer<R>(mut call: impl FnMut(&mut [c_char]) -> (i32, Option<R>)) -> Option<R> {
    let mut buf = vec![0 as c_char; 1024];
    loop {
        match call(&mut buf) {
            (libc::ERANGE, _) if buf.len() < 1 << 20 => buf.resize(buf.len() * 2, 0),
            (0, found) => return found,
            _ => return None,
        }
    }
}

/// Defines a lookup in the user or group database: by id when `name` is
/// `None`, else by name; the entry's id and name.
macro_rules! entry_lookup {
    ($(#[$doc:meta])* $fn:ident, $ty:ty, $by_name:ident, $by_id:ident, $id:ident, $name:ident) => {
        $(#[$doc])*
        fn $fn(id: u32, name: Option<&CStr>) -> Option<(u32, String)> {
            with_buffer(|buf| {
                // SAFETY: a plain C struct of integers and pointers, for
                // which all zeroes is a valid value; the call fills it in.
                let mut e: $ty = unsafe { std::mem::zeroed() };
                let mut found = std::ptr::null_mut();
                let (p, n) = (buf.as_mut_ptr(), buf.len());
                // SAFETY: every pointer is to a live local, a
                // NUL-terminated string, or `buf` with its true length.
                let rc = unsafe {
                    match name {
                        Some(s) => libc::$by_name(s.as_ptr(), &mut e, p, n, &mut found),
                        None => libc::$by_id(id, &mut e, p, n, &mut found),
                    }
                };
                // SAFETY: when an entry was found, its name points to a
                // NUL-terminated string in `buf`, which is still alive.
                let name = || unsafe { CStr::from_ptr(e.$name) };
                (rc, (!found.is_null()).then(|| (e.$id, name().to_string_lossy().into_owned())))
            })
        }
    };
}

entry_lookup!(
    /// A user's entry (`getpwnam_r`, `getpwuid_r`).
    passwd, libc::passwd, getpwnam_r, getpwuid_r, pw_uid, pw_name
);
entry_lookup!(
    /// A group's entry (`getgrnam_r`, `getgrgid_r`).
    group, libc::group, getgrnam_r, getgrgid_r, gr_gid, gr_name
);

fn user_name(uid: u32) -> Option<String> {
    passwd(uid, None).map(|(_, name)| name)
}

fn group_name(gid: u32) -> Option<String> {
    group(gid, None).map(|(_, name)| name)
}

/// A user id from a user name or a number, for options such as
/// `shmetrics serve --store.owner`.
///
/// # Errors
/// [`ErrorKind::InvalidOptions`] if it is neither a number nor a known
/// user's name.
pub fn user_id(user: &str) -> Result<u32> {
    resolve(user, "user", |n| passwd(0, Some(n)))
}

/// A group id from a group name or a number, for options such as
/// `shmetrics serve --store.group`.
///
/// # Errors
/// [`ErrorKind::InvalidOptions`] if it is neither a number nor a known
/// group's name.
pub fn group_id(name: &str) -> Result<u32> {
    resolve(name, "group", |n| group(0, Some(n)))
}

fn resolve(s: &str, what: &str, by_name: impl Fn(&CStr) -> Option<(u32, String)>) -> Result<u32> {
    if let Ok(id) = s.parse::<u32>() {
        return Ok(id);
    }
    let unknown = || {
        Error::new(
            ErrorKind::InvalidOptions,
            format!("no {what} is named {s:?}"),
        )
    };
    let name = std::ffi::CString::new(s).map_err(|_| unknown())?;
    by_name(&name).map(|(id, _)| id).ok_or_else(unknown)
}

impl super::Mapping {
    /// The mapped file's identity, its device and inode (from `fstat` on
    /// the open file, so it is the file mapped even after its path was
    /// removed or now names another file).
    pub fn file_id(&self) -> Result<(u64, u64)> {
        let meta = self
            .file
            .metadata()
            .map_err(|e| Error::io(&self.path, "cannot stat the store file", &e))?;
        Ok((meta.dev(), meta.ino()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_resolve_both_ways() {
        assert_eq!(user_id("root").unwrap(), 0);
        assert_eq!(user_id("0").unwrap(), 0);
        assert_eq!(group_id("root").unwrap(), 0);
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert_eq!(describe_group(0), "root (gid 0)");
        let e = user_id("no-such-user-here").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidOptions);
        assert!(e.message().contains("no-such-user-here"), "{e}");
        assert!(group_id("a\0b").is_err());
        assert_eq!(describe_user(4_000_000_000), "uid 4000000000");
    }
}
