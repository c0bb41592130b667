//! The secrets file: one line per host, `HOSTNQN HOST_SECRET
//! [CTRL_SECRET]` (the controller's secret makes authentication
//! bidirectional), `#` comments and blank lines allowed. Secrets never
//! come from the command line; the file must be readable by its owner
//! only (no group or other permission bits), or it is refused.

use std::collections::HashMap;
use std::path::Path;

use super::{AuthError, Secret};

/// One host's secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSecrets {
    /// The secret the host proves it holds.
    pub host: Secret,
    /// The secret the controller proves it holds (bidirectional).
    pub ctrl: Option<Secret>,
}

/// Reads and checks the secrets file at `path`: host NQN → secrets.
pub fn load(path: &Path) -> Result<HashMap<String, HostSecrets>, AuthError> {
    let err = |why: String| AuthError::File {
        path: path.display().to_string(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(err(format!(
                "mode {:o}: readable by others than its owner (chmod 600)",
                mode & 0o777
            )));
        }
    }
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    parse(&text).map_err(|(line, why)| err(format!("line {line}: {why}")))
}

/// Parses the file's text; errors name the line.
pub fn parse(text: &str) -> Result<HashMap<String, HostSecrets>, (usize, String)> {
    let mut hosts = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (nqn, host, ctrl) = match fields.as_slice() {
            [nqn, host] => (*nqn, *host, None),
            [nqn, host, ctrl] => (*nqn, *host, Some(*ctrl)),
            _ => return Err((n, "expected HOSTNQN HOST_SECRET [CTRL_SECRET]".into())),
        };
        if !nqn.starts_with("nqn.") || nqn.len() > 223 {
            return Err((n, format!("{nqn:?} is not a host NQN")));
        }
        let secret = |s: &str| Secret::parse(s).map_err(|e| (n, e.to_string()));
        let entry = HostSecrets {
            host: secret(host)?,
            ctrl: ctrl.map(secret).transpose()?,
        };
        if hosts.insert(nqn.to_string(), entry).is_some() {
            return Err((n, format!("{nqn} given twice")));
        }
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::super::Transform;
    use super::*;

    fn secret(b: u8) -> String {
        Secret::new(vec![b; 32], Transform::Sha256)
            .unwrap()
            .to_text()
    }

    #[test]
    fn lines_comments_and_bidirectional_hosts() {
        let text = format!(
            "# hosts\n\nnqn.2026-12.test:a {}\nnqn.2026-12.test:b {} {}  # both ways\n",
            secret(1),
            secret(2),
            secret(3)
        );
        let h = parse(&text).unwrap();
        assert_eq!(h.len(), 2);
        assert!(h["nqn.2026-12.test:a"].ctrl.is_none());
        assert_eq!(
            h["nqn.2026-12.test:b"].ctrl.as_ref().unwrap().key(),
            &[3u8; 32]
        );
    }

    #[test]
    fn bad_lines_name_their_line() {
        let s = secret(1);
        for (text, line) in [
            ("nqn.x:a\n".to_string(), 1),
            (format!("\nhost {s}\n"), 2),
            (format!("nqn.x:a {s}\nnqn.x:a {s}\n"), 2),
            ("nqn.x:a DHHC-1:00:AAAA:\n".to_string(), 1),
            (format!("nqn.x:a {s} {s} {s}\n"), 1),
        ] {
            assert_eq!(parse(&text).unwrap_err().0, line, "{text}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("nvme-tcp-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("secrets");
        std::fs::write(&path, format!("nqn.x:a {}\n", secret(5))).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load(&path).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load(&path).unwrap().len(), 1);
        assert!(load(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
