//! Secret values sealed at rest (docs/security.md, "Secrets at rest").
//!
//! A value is stored as `sealed:v1:<key id>:<base64(nonce ‖ ciphertext ‖
//! tag)>`, sealed with ChaCha20-Poly1305 (ring's AEAD) under a 256-bit key
//! kept outside the data directory, so a copy of the database alone reveals
//! nothing. The row the value belongs to (table, owner, name) is the
//! associated data: a value moved to another row does not open. The key id
//! is the start of the key's SHA-256, so several keys can be known at once
//! while one is rotated out. A value without the prefix was written before
//! values were sealed; the server seals those at start.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use sha2::{Digest, Sha256};

const PREFIX: &str = "sealed:v1:";

/// Why a key cannot be used or a value cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("cannot read the secret key {}", path.display())]
    ReadKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the new secret key {}", path.display())]
    WriteKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The key's text is not 64 hexadecimal digits.
    #[error("the secret key from {0} is not 64 hexadecimal digits (32 bytes)")]
    BadKey(String),
    /// The value names a key this server was not given.
    #[error(
        "a sealed value names key {0}, which this server does not have (secrets.key_file, secrets.previous_key_files)"
    )]
    UnknownKey(String),
    /// Wrong key, a value moved from another row, or changed bytes.
    #[error("a sealed value of {0} does not open: it was changed, or moved from another row")]
    Tampered(String),
    #[error("the operating system has no random source")]
    Random,
}

/// One 256-bit key and its id.
struct Key {
    id: String,
    key: LessSafeKey,
}

impl Key {
    fn from_hex(text: &str, from: &str) -> Result<Key, SealError> {
        let text = text.trim();
        let bad = || SealError::BadKey(from.to_string());
        if text.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        let digest = Sha256::digest(bytes);
        let id = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        let key = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &bytes).map_err(|_| bad())?);
        Ok(Key { id, key })
    }
}

/// The key values are sealed with, and earlier ones that still open values.
pub struct SealingKeys {
    current: Key,
    previous: Vec<Key>,
}

impl std::fmt::Debug for SealingKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealingKeys").field("current", &self.current.id).finish_non_exhaustive()
    }
}

/// Where the keys come from (`[secrets]` in the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A file holding 64 hex digits; created (0600) when it does not exist
    /// and the database holds no sealed value yet.
    File(PathBuf),
    /// An environment variable of the server holding 64 hex digits.
    Env(String),
}

/// 32 random bytes as 64 hex digits.
pub fn new_key_text() -> Result<String, SealError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| SealError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
}

fn read_key_file(path: &Path) -> Result<Key, SealError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| SealError::ReadKey { path: path.to_path_buf(), source })?;
    Key::from_hex(&text, &path.display().to_string())
}

impl SealingKeys {
    /// The keys from `current` and `previous` files. A missing current key
    /// file is created when `may_create` (nothing is sealed yet); the
    /// returned flag says it was.
    pub fn load(current: &KeySource, previous: &[PathBuf], may_create: bool) -> Result<(SealingKeys, bool), SealError> {
        let mut created = false;
        let current = match current {
            KeySource::File(path) if !path.exists() && may_create => {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                let write = |source| SealError::WriteKey { path: path.clone(), source };
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(write)?;
                }
                let mut file =
                    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(write)?;
                file.write_all(new_key_text()?.as_bytes()).map_err(write)?;
                file.sync_all().map_err(write)?;
                created = true;
                read_key_file(path)?
            }
            KeySource::File(path) => read_key_file(path)?,
            KeySource::Env(name) => {
                let text = std::env::var(name).map_err(|_| SealError::BadKey(format!("${name}")))?;
                Key::from_hex(&text, &format!("${name}"))?
            }
        };
        let previous = previous.iter().map(|path| read_key_file(path)).collect::<Result<Vec<_>, _>>()?;
        Ok((SealingKeys { current, previous }, created))
    }

    /// Keys from hex text, for tests.
    pub fn from_hex(current: &str, previous: &[&str]) -> Result<SealingKeys, SealError> {
        Ok(SealingKeys {
            current: Key::from_hex(current, "text")?,
            previous: previous.iter().map(|t| Key::from_hex(t, "text")).collect::<Result<_, _>>()?,
        })
    }

    /// The current key's id.
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    /// `value` sealed under the current key, bound to `row`.
    pub fn seal(&self, value: &str, row: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| SealError::Random)?;
        let mut sealed = value.as_bytes().to_vec();
        self.current
            .key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(row.as_bytes()), &mut sealed)
            .map_err(|_| SealError::Tampered(row.to_string()))?;
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        Ok(format!("{PREFIX}{}:{}", self.current.id, base64::engine::general_purpose::STANDARD.encode(bytes)))
    }

    /// The value `stored` holds for `row`: opened when sealed, as it is
    /// when written before values were sealed.
    pub fn open(&self, stored: &str, row: &str) -> Result<String, SealError> {
        let Some((id, body)) = sealed_parts(stored) else { return Ok(stored.to_string()) };
        let key = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == id)
            .ok_or_else(|| SealError::UnknownKey(id.to_string()))?;
        let tampered = || SealError::Tampered(row.to_string());
        let mut bytes = base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| tampered())?;
        if bytes.len() < NONCE_LEN {
            return Err(tampered());
        }
        let nonce = Nonce::try_assume_unique_for_key(&bytes[..NONCE_LEN]).map_err(|_| tampered())?;
        let opened =
            key.key.open_in_place(nonce, Aad::from(row.as_bytes()), &mut bytes[NONCE_LEN..]).map_err(|_| tampered())?;
        String::from_utf8(opened.to_vec()).map_err(|_| tampered())
    }

    /// Whether `stored` is sealed under the current key (else the start-up
    /// pass seals it again).
    pub fn is_current(&self, stored: &str) -> bool {
        sealed_parts(stored).is_some_and(|(id, _)| id == self.current.id)
    }
}

/// The key id and body of a sealed value; `None` for a value stored before
/// values were sealed.
fn sealed_parts(stored: &str) -> Option<(&str, &str)> {
    let rest = stored.strip_prefix(PREFIX)?;
    let (id, body) = rest.split_once(':')?;
    (id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some((id, body))
}

/// Whether `stored` is sealed (under any key).
pub fn is_sealed(stored: &str) -> bool {
    sealed_parts(stored).is_some()
}

/// The associated data of a secret's value: its table and row, with
/// separators no name holds.
pub fn row_of(table: &str, owner: &str, name: &str) -> String {
    format!("{table}\u{0}{owner}\u{0}{name}")
}

/// The keys a store seals with, if it was given any (`Store::use_keys`);
/// a store without keys (the command line's token tools, unit tests)
/// writes values as they are and cannot open sealed ones.
pub(super) type Keys = Option<std::sync::Arc<SealingKeys>>;

/// `value` as the store writes it for `row`.
pub(super) fn seal_value(keys: &Keys, value: &str, row: &str) -> rusqlite::Result<String> {
    match keys {
        Some(keys) => keys.seal(value, row).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e))),
        None => Ok(value.to_string()),
    }
}

/// The value the store holds in column `index` of `row`, opened.
pub(super) fn open_value(keys: &Keys, stored: String, row: &str, index: usize) -> rusqlite::Result<String> {
    let failed =
        |e: SealError| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e));
    match keys {
        Some(keys) => keys.open(&stored, row).map_err(failed),
        None if is_sealed(&stored) => Err(failed(SealError::UnknownKey(stored[PREFIX.len()..PREFIX.len() + 8].into()))),
        None => Ok(stored),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const B: &str = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";

    #[test]
    fn a_sealed_value_opens_for_its_row_only_and_never_shows_in_clear() {
        let keys = SealingKeys::from_hex(A, &[]).unwrap();
        let row = row_of("secrets", "alice", "HF_TOKEN");
        let sealed = keys.seal("hf_s3cret", &row).unwrap();
        assert!(sealed.starts_with(&format!("sealed:v1:{}:", keys.current_id())), "{sealed}");
        assert!(!sealed.contains("s3cret"));
        assert_ne!(sealed, keys.seal("hf_s3cret", &row).unwrap(), "a fresh nonce each time");
        assert_eq!(keys.open(&sealed, &row).unwrap(), "hf_s3cret");
        let moved = keys.open(&sealed, &row_of("secrets", "mallory", "HF_TOKEN")).unwrap_err();
        assert!(matches!(moved, SealError::Tampered(_)), "{moved}");
        let mut changed = sealed.clone();
        changed.replace_range(sealed.len() - 3..sealed.len() - 2, if sealed.ends_with("A==") { "B" } else { "A" });
        assert!(keys.open(&changed, &row).is_err());
        assert_eq!(keys.open("written before sealing", &row).unwrap(), "written before sealing");
    }

    #[test]
    fn a_rotated_key_still_opens_what_it_sealed_and_an_unknown_one_is_named() {
        let old = SealingKeys::from_hex(A, &[]).unwrap();
        let sealed = old.seal("v", "r").unwrap();
        let rotated = SealingKeys::from_hex(B, &[A]).unwrap();
        assert_eq!(rotated.open(&sealed, "r").unwrap(), "v");
        assert!(!rotated.is_current(&sealed) && old.is_current(&sealed));
        let without = SealingKeys::from_hex(B, &[]).unwrap();
        assert!(matches!(without.open(&sealed, "r"), Err(SealError::UnknownKey(id)) if id == old.current_id()));
        assert!(SealingKeys::from_hex("abc", &[]).is_err());
    }

    #[test]
    fn a_missing_key_file_is_created_private_only_when_allowed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/jobdeck.key");
        let source = KeySource::File(path.clone());
        assert!(matches!(SealingKeys::load(&source, &[], false), Err(SealError::ReadKey { .. })));
        let (keys, created) = SealingKeys::load(&source, &[], true).unwrap();
        assert!(created);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let (again, created) = SealingKeys::load(&source, &[], true).unwrap();
        assert!(!created, "an existing key is kept");
        assert_eq!(again.current_id(), keys.current_id());
    }
}
