//! The container: its image reference, tag, ports and command.

use super::*;

/// Checks an image reference such as `nvcr.io/nvidia/pytorch:25.08-py3`.
pub fn check_image(image: &str) -> Result<(), String> {
    if image.trim().is_empty() {
        return Err("must not be empty; leave it out for the default".into());
    }
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    // An engine reads its command line with option parsing: a reference
    // that starts with '-' would be taken as one of its options (a volume
    // of the host's root, say) wherever it is not behind `--`.
    if image.starts_with('-') {
        return Err("must not start with '-': a container engine would read it as an option".into());
    }
    let parts = split_image_reference(image);
    if parts.name.is_empty() || parts.name.ends_with('/') || parts.name.starts_with('/') {
        return Err("must name an image, such as 'nvcr.io/nvidia/pytorch'".into());
    }
    // Registries are host names (case-insensitive); repository paths must be
    // lowercase or every container engine refuses to pull them.
    let (host, repository) = match parts.name.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => (Some(host), rest),
        _ => (None, parts.name),
    };
    if repository.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(format!("must be lowercase in its repository path ('{repository}')"));
    }
    if let Some(host) = host {
        check_registry_host(host)?;
    }
    for part in repository.split('/') {
        check_repository_part(part)?;
    }
    if let Some(tag) = parts.tag {
        check_image_tag(tag).map_err(|m| format!("has an invalid tag: it {m}"))?;
    }
    if let Some(digest) = parts.digest {
        let valid = digest.split_once(':').is_some_and(|(algorithm, hex)| {
            !algorithm.is_empty() && !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !valid {
            return Err(format!("has an invalid digest '{digest}': it must look like 'sha256:<hex>'"));
        }
    }
    Ok(())
}

/// Checks the registry of an image reference: a host name (letters,
/// digits and '-' between dots) or a bracketed IPv6 address, with an
/// optional port.
pub(super) fn check_registry_host(host: &str) -> Result<(), String> {
    let bad = || Err(format!("has an invalid registry '{host}': it must be a host name with an optional port"));
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !name.ends_with(':') && !port.contains(']') => (name, Some(port)),
        _ => (host, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return bad();
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        if inner.is_empty() || !inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return bad();
        }
        return Ok(());
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes[0].is_ascii_alphanumeric()
            && bytes[bytes.len() - 1].is_ascii_alphanumeric()
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
    };
    if name.split('.').all(label_ok) {
        Ok(())
    } else {
        bad()
    }
}

/// Checks one part of an image's repository path (between slashes):
/// lowercase letters and digits, joined by one '.', one or two '_', or any
/// number of '-' (the OCI distribution grammar).
pub(super) fn check_repository_part(part: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "has an invalid name part '{part}': each part is lowercase letters and digits, joined by '.', '_', '__' or '-'"
        ))
    };
    let bytes = part.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !bytes.first().is_some_and(alphanumeric) || !bytes.last().is_some_and(alphanumeric) {
        return bad();
    }
    // The separator before the current character: its first character,
    // its length and whether all of it is that character.
    let (mut first, mut length, mut uniform) = (0u8, 0usize, true);
    for b in bytes {
        if alphanumeric(b) {
            let allowed = length == 0
                || (uniform && first == b'-')
                || (uniform && first == b'_' && length <= 2)
                || (first == b'.' && length == 1);
            if !allowed {
                return bad();
            }
            length = 0;
        } else if matches!(b, b'.' | b'_' | b'-') {
            if length == 0 {
                (first, uniform) = (*b, true);
            } else {
                uniform &= *b == first;
            }
            length += 1;
        } else {
            return bad();
        }
    }
    Ok(())
}

/// Checks an image tag: at most 128 letters, digits, `_`, `.` and `-`, not
/// starting with `.` or `-`.
pub fn check_image_tag(tag: &str) -> Result<(), String> {
    let Some(first) = tag.chars().next() else {
        return Err("must not be empty".into());
    };
    let len = tag.chars().count();
    if len > IMAGE_TAG_MAX_LEN {
        return Err(format!("must be at most {IMAGE_TAG_MAX_LEN} characters (it has {len})"));
    }
    if !(first.is_ascii_alphanumeric() || first == '_') {
        return Err("must start with a letter, a digit or '_'".into());
    }
    if let Some(bad) = tag.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))) {
        return Err(format!("may contain only letters, digits, '_', '.' and '-', not {}", quoted(bad)));
    }
    Ok(())
}

/// Checks a port name: an IANA service name as Kubernetes requires, at most
/// 15 lowercase letters, digits and single hyphens, with at least one letter.
pub fn check_port_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty; leave it out for an unnamed port".into());
    }
    let len = name.chars().count();
    if len > PORT_NAME_MAX_LEN {
        return Err(format!("must be at most {PORT_NAME_MAX_LEN} characters (it has {len})"));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return Err(format!("may contain only lowercase letters, digits and '-', not {}", quoted(bad)));
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        return Err("must contain at least one letter".into());
    }
    if name.starts_with('-') || name.ends_with('-') || has_pair(name, b"--") {
        return Err("must not start or end with '-' or contain '--'".into());
    }
    Ok(())
}

pub(super) fn check_container(container: &Container, problems: &mut Problems) {
    let image = container.image.as_deref();
    if let Some(image) = image {
        if let Err(message) = check_image(image) {
            problems.add("spec.container.image", message);
        }
    }
    if let Some(tag) = container.image_tag.as_deref() {
        let embedded = image.map(split_image_reference);
        let message = match embedded {
            None => Err("needs an image (spec.container.image)".to_string()),
            Some(parts) if parts.digest.is_some() => Err("must be left out when the image pins a digest".to_string()),
            Some(parts) if parts.tag.is_some() => Err(format!(
                "must be left out when the image already names a tag ('{}')",
                parts.tag.unwrap_or_default()
            )),
            Some(_) => check_image_tag(tag),
        };
        if let Err(message) = message {
            problems.add("spec.container.image_tag", message);
        }
    }
    if let Some(dir) = container.working_dir.as_deref() {
        if let Err(message) = check_working_dir(dir) {
            problems.add("spec.container.working_dir", message);
        }
    }
    if let Some(Err(message)) = container.user.as_deref().map(crate::parse_container_user) {
        problems.add("spec.container.user", message);
    }
    let username = container.registry_username.as_deref();
    let password = container.registry_password.as_deref();
    for (path, value) in
        [("spec.container.registry_username", username), ("spec.container.registry_password", password)]
    {
        if value.is_some_and(str::is_empty) {
            problems.add(path, "must not be empty; leave it out for a public image");
        }
    }
    match (username, password) {
        (Some(_), None) => {
            problems.add("spec.container.registry_password", "is required when a registry username is set")
        }
        (None, Some(_)) => {
            problems.add("spec.container.registry_username", "is required when a registry password is set")
        }
        _ => {}
    }
    for (field, list) in [("command", container.command()), ("args", container.args())] {
        for (i, arg) in list.iter().enumerate() {
            if arg.contains('\0') {
                problems.add(format!("spec.container.{field}[{i}]"), "must not contain a NUL character");
            }
        }
    }
    let (mut seen_ports, mut seen_names) = (Keys::default(), Keys::default());
    for (i, port) in container.ports().iter().enumerate() {
        let path = format!("spec.container.ports[{i}]");
        let protocol = match port.protocol.as_deref() {
            None => Some(Protocol::Tcp),
            Some(p) => Protocol::parse(p),
        };
        if protocol.is_none() {
            problems.add(format!("{path}.protocol"), "must be TCP, UDP or SCTP");
        }
        if let (Some(protocol), true) = (protocol, (1..=PORT_MAX).contains(&port.container_port)) {
            seen_ports.add(format!("{}/{protocol}", port.container_port), i);
        }
        if let Some(name) = port.name.as_deref() {
            if let Err(message) = check_port_name(name) {
                problems.add(format!("{path}.name"), message);
            } else {
                seen_names.add(name, i);
            }
        }
        for (j, strategy) in port.expose_strategies.iter().flatten().enumerate() {
            if !matches!(strategy.as_str(), "HostPortMapping" | "IngressProxy") {
                problems.add(format!("{path}.expose_strategies[{j}]"), "must be HostPortMapping or IngressProxy");
            }
        }
    }
    for (i, port, first) in seen_ports.repeats() {
        let message = format!("{port} is already listed at spec.container.ports[{first}]");
        problems.add(format!("spec.container.ports[{i}].container_port"), message);
    }
    for (i, name, first) in seen_names.repeats() {
        let message = format!("'{name}' is already used by spec.container.ports[{first}]");
        problems.add(format!("spec.container.ports[{i}].name"), message);
    }
}

/// The longest working directory: Linux's `PATH_MAX`.
pub const WORKING_DIR_MAX_BYTES: usize = 4096;

/// A working directory inside the container: an absolute path the engine
/// takes as one argument.
fn check_working_dir(dir: &str) -> Result<(), &'static str> {
    if !dir.starts_with('/') {
        return Err("must be an absolute path inside the container, such as /workspace");
    }
    if dir.len() > WORKING_DIR_MAX_BYTES {
        return Err("must be at most 4096 bytes");
    }
    if dir.chars().any(char::is_control) {
        return Err("must not contain control characters");
    }
    Ok(())
}
