//! Large DATA spooled to disk, encrypted: a message that outgrows
//! [`Spool::threshold`] goes on into a temporary file instead of memory.
//!
//! Each spool file has its own random 256-bit key, made when it is created
//! and held only in this process's memory: a file left behind (a crash) is
//! unreadable, and plaintext never reaches the disk. The message is sealed
//! with ChaCha20-Poly1305 (*ring*) in chunks of [`CHUNK`] octets, each with
//! its own tag; a chunk's nonce is its number and whether it is the last, so
//! chunks cannot be reordered, dropped or cut short unnoticed. The file is
//! deleted when its handle drops: after the delivery was answered, or as
//! soon as the message is refused.
//!
//! All spool files together take at most [`Spool::budget`] bytes (sealed
//! size): a file reserves each chunk before writing it, and gives all back
//! when it is deleted. A message the budget cannot take is refused (452)
//! and its file deleted; messages already spooled are untouched.
//!
//! At start-up [`check_spool_dir`] refuses a directory another user owns or
//! others may enter (mode wider than 0700), and says whether it is on
//! tmpfs, where spooled messages take memory rather than disk.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use nix::sys::statfs::{TMPFS_MAGIC, statfs};

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use crate::limits::{ByteBudget, Reservation};

/// Plaintext octets per sealed chunk.
pub(crate) const CHUNK: usize = 64 * 1024;
/// The tag each chunk carries.
const TAG: usize = 16;
/// Spool file names start with this; nothing else in the directory is touched.
const PREFIX: &str = "spool-";

/// Where and from what size messages are spooled, and how much the spool
/// may hold. Clones share the budget.
#[derive(Clone, Debug)]
pub struct Spool {
    /// The directory of the spool files (created at first use, mode 0700).
    pub dir: PathBuf,
    /// Octets of a message kept in memory while it arrives; beyond them it
    /// is spooled.
    pub threshold: usize,
    /// Bytes all spool files may take at once, as sealed on disk.
    pub budget: ByteBudget,
}

impl Spool {
    /// A spool in `dir` past `threshold` octets, of at most `budget` bytes.
    pub fn new(dir: impl Into<PathBuf>, threshold: usize, budget: usize) -> Self {
        Self {
            dir: dir.into(),
            threshold: threshold.max(CHUNK),
            budget: ByteBudget::new(budget),
        }
    }

    /// Whether a message of `size` octets would find room now: one kept
    /// in memory always does, a spooled one needs its sealed size.
    pub(crate) fn has_room_for(&self, size: usize) -> bool {
        size <= self.threshold || self.budget.available() >= sealed_len(size)
    }

    /// Deletes the spool files in the directory: what a process that died
    /// mid-message left behind, unreadable without its key. Run at
    /// start-up; an open spool file of a live process sharing the directory
    /// is unaffected (its handle stays readable), only its name goes.
    /// Answers how many were deleted.
    pub fn clear_leftovers(&self) -> io::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(error) => return Err(error),
        };
        let mut deleted = 0;
        for entry in entries {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(PREFIX) {
                std::fs::remove_file(entry.path())?;
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// The file's name, removed on drop.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        // Gone already (a start-up clean-up of another process) is fine.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A spool file being written.
pub(crate) struct SpoolWriter {
    file: tokio::fs::File,
    key: LessSafeKey,
    /// Chunks written so far, all full.
    chunks: u64,
    /// Plaintext octets written so far.
    written: usize,
    sealed: Vec<u8>,
    // Last: the file is closed before its name is removed, and removed
    // before its bytes go back to the budget.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "held for its drop, which deletes the file")
    )]
    name: Removed,
    /// The file's sealed bytes, of [`Spool::budget`].
    reserved: Reservation,
}

impl SpoolWriter {
    /// A new, empty spool file under a fresh random key.
    pub(crate) async fn create(spool: &Spool) -> io::Result<Self> {
        let random = SystemRandom::new();
        let mut key = [0_u8; 32];
        let mut id = [0_u8; 16];
        random
            .fill(&mut key)
            .and_then(|()| random.fill(&mut id))
            .map_err(|_| io::Error::other("no randomness for a spool key"))?;
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, &key)
            .map_err(|_| io::Error::other("spool key rejected"))?;
        key.fill(0);
        create_dir(&spool.dir).await?;
        let name: String = id.iter().fold(String::from(PREFIX), |mut name, byte| {
            name.push_str(&format!("{byte:02x}"));
            name
        });
        let path = spool.dir.join(name);
        let mut options = tokio::fs::OpenOptions::new();
        options.read(true).write(true).create_new(true).mode(0o600);
        let file = options.open(&path).await?;
        Ok(Self {
            file,
            key: LessSafeKey::new(unbound),
            chunks: 0,
            written: 0,
            sealed: Vec::with_capacity(CHUNK + TAG),
            name: Removed(path),
            reserved: spool.budget.reservation(),
        })
    }

    /// Plaintext octets spooled so far.
    pub(crate) fn len(&self) -> usize {
        self.written
    }

    /// The file's path (tests look at its bytes).
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.name.0
    }

    /// Seals and writes the full chunks at the front of `buffer`, leaving
    /// the rest (less than a chunk) in it.
    pub(crate) async fn write_full_chunks(&mut self, buffer: &mut Vec<u8>) -> io::Result<()> {
        let full = buffer.len() / CHUNK * CHUNK;
        for start in (0..full).step_by(CHUNK) {
            let end = start + CHUNK;
            self.write_chunk(buffer.get(start..end).unwrap_or_default(), false)
                .await?;
        }
        buffer.drain(..full);
        Ok(())
    }

    /// Writes `tail` (less than a chunk, maybe empty) as the last chunk.
    pub(crate) async fn finish(mut self, tail: &[u8]) -> io::Result<Spooled> {
        debug_assert!(tail.len() < CHUNK);
        self.write_chunk(tail, true).await?;
        self.file.flush().await?;
        Ok(Spooled { writer: self })
    }

    /// Seals and writes one chunk, once the budget took its bytes; an
    /// error of kind [`io::ErrorKind::QuotaExceeded`] when it cannot.
    async fn write_chunk(&mut self, plain: &[u8], last: bool) -> io::Result<()> {
        let reserved = self.reserved.bytes().saturating_add(plain.len() + TAG);
        if !self.reserved.grow_to(reserved) {
            return Err(io::Error::new(
                io::ErrorKind::QuotaExceeded,
                "the spool budget is used up",
            ));
        }
        self.sealed.clear();
        self.sealed.extend_from_slice(plain);
        self.key
            .seal_in_place_append_tag(nonce(self.chunks, last), Aad::empty(), &mut self.sealed)
            .map_err(|_| io::Error::other("sealing a spool chunk failed"))?;
        self.file.write_all(&self.sealed).await?;
        self.chunks += 1;
        self.written += plain.len();
        Ok(())
    }
}

/// A complete spooled message; its file is deleted on drop.
pub(crate) struct Spooled {
    writer: SpoolWriter,
}

impl Spooled {
    /// The message's length in octets.
    pub(crate) fn len(&self) -> usize {
        self.writer.written
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Reads the message back into memory, checking every chunk's tag.
    pub(crate) async fn read(&mut self) -> io::Result<Vec<u8>> {
        let writer = &mut self.writer;
        writer.file.seek(io::SeekFrom::Start(0)).await?;
        let mut message = Vec::with_capacity(writer.written);
        let mut sealed = Vec::with_capacity(CHUNK + TAG);
        let mut left = writer.written;
        for number in 0..writer.chunks {
            let last = number + 1 == writer.chunks;
            let plain = if last { left } else { CHUNK };
            if plain > left || (last && plain >= CHUNK) {
                return Err(damaged());
            }
            sealed.resize(plain + TAG, 0);
            writer.file.read_exact(&mut sealed).await?;
            let opened = writer
                .key
                .open_in_place(nonce(number, last), Aad::empty(), &mut sealed)
                .map_err(|_| damaged())?;
            message.extend_from_slice(opened);
            left -= plain;
        }
        let mut more = [0_u8; 1];
        if left != 0 || writer.file.read(&mut more).await? != 0 {
            return Err(damaged());
        }
        Ok(message)
    }
}

/// The size on disk of a message of `plain` octets: every chunk, the last
/// one (maybe empty) included, carries its tag.
pub(crate) fn sealed_len(plain: usize) -> usize {
    plain.saturating_add((plain / CHUNK + 1) * TAG)
}

fn damaged() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a spool file does not open: changed on disk",
    )
}

/// Chunk `number` (big-endian), then 1 for the last chunk, else 0.
fn nonce(number: u64, last: bool) -> Nonce {
    let mut bytes = [0_u8; NONCE_LEN];
    bytes[..8].copy_from_slice(&number.to_be_bytes());
    bytes[8] = u8::from(last);
    Nonce::assume_unique_for_key(bytes)
}

async fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = tokio::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    builder.create(dir).await
}

/// What start-up learned of the spool directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpoolDir {
    /// On tmpfs: spooled messages take memory (and swap), not disk.
    pub on_tmpfs: bool,
}

/// Why the spool directory is refused.
#[derive(Debug)]
pub enum SpoolDirError {
    /// It could not be created or looked at.
    Io(io::Error),
    NotADirectory,
    /// Another user owns it (or the link to it): that user could read,
    /// replace or remove the spool files.
    OtherOwner {
        owner: u32,
        ours: u32,
    },
    /// Its mode lets others in (wider than 0700).
    TooOpen {
        mode: u32,
    },
}

impl std::fmt::Display for SpoolDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpoolDirError::Io(error) => write!(f, "cannot be created or read: {error}"),
            SpoolDirError::NotADirectory => f.write_str("is not a directory"),
            SpoolDirError::OtherOwner { owner, ours } => write!(
                f,
                "is owned by user {owner}, not by this process's user {ours}; \
                 give the ingest a directory of its own"
            ),
            SpoolDirError::TooOpen { mode } => {
                write!(f, "has mode {mode:04o}, wider than 0700; `chmod 700` it")
            }
        }
    }
}

impl std::error::Error for SpoolDirError {}

impl From<io::Error> for SpoolDirError {
    fn from(error: io::Error) -> Self {
        SpoolDirError::Io(error)
    }
}

/// Creates the spool directory when missing (mode 0700) and checks it: a
/// directory another user owns (or reached through a link another user
/// owns, root aside) or with a mode wider than 0700 is refused. Says
/// whether it is on tmpfs.
pub fn check_spool_dir(dir: &Path) -> Result<SpoolDir, SpoolDirError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let ours = nix::unistd::geteuid().as_raw();
    let link = std::fs::symlink_metadata(dir)?;
    if link.file_type().is_symlink() && link.uid() != ours && link.uid() != 0 {
        return Err(SpoolDirError::OtherOwner {
            owner: link.uid(),
            ours,
        });
    }
    let target = std::fs::metadata(dir)?;
    judge_dir(target.is_dir(), target.uid(), target.mode(), ours)?;
    let on_tmpfs = statfs(dir).map_err(io::Error::from)?.filesystem_type() == TMPFS_MAGIC;
    Ok(SpoolDir { on_tmpfs })
}

/// The rule on the directory's owner and mode.
fn judge_dir(is_dir: bool, owner: u32, mode: u32, ours: u32) -> Result<(), SpoolDirError> {
    if !is_dir {
        return Err(SpoolDirError::NotADirectory);
    }
    if owner != ours {
        return Err(SpoolDirError::OtherOwner { owner, ours });
    }
    if mode & 0o077 != 0 {
        return Err(SpoolDirError::TooOpen {
            mode: mode & 0o7777,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spool(name: &str) -> Spool {
        let dir =
            std::env::temp_dir().join(format!("sealpost-spool-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Spool::new(dir, CHUNK, 1 << 30)
    }

    async fn spooled(spool: &Spool, message: &[u8]) -> Spooled {
        let mut writer = SpoolWriter::create(spool).await.unwrap();
        let mut buffer = Vec::new();
        // In uneven pieces, as a session receives them.
        for piece in message.chunks(10_000) {
            buffer.extend_from_slice(piece);
            writer.write_full_chunks(&mut buffer).await.unwrap();
            assert!(buffer.len() < CHUNK);
        }
        writer.finish(&buffer).await.unwrap()
    }

    #[tokio::test]
    async fn a_message_reads_back_as_written_and_the_file_holds_no_plaintext() {
        let spool = spool("roundtrip");
        for size in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17] {
            let message: Vec<u8> = b"MARKER-PLAINTEXT "
                .iter()
                .copied()
                .cycle()
                .take(size)
                .collect();
            let mut file = spooled(&spool, &message).await;
            assert_eq!(file.len(), size);
            let on_disk = std::fs::read(file.path()).unwrap();
            // Full chunks, then a last one shorter than a chunk (maybe empty).
            assert_eq!(on_disk.len(), size + (size / CHUNK + 1) * TAG);
            assert!(!on_disk.windows(8).any(|w| w == b"PLAINTEX"));
            assert_eq!(file.read().await.unwrap(), message, "{size} octets");
            let path = file.path().to_owned();
            drop(file);
            assert!(!path.exists(), "deleted on drop");
        }
        let _ = std::fs::remove_dir_all(&spool.dir);
    }

    #[tokio::test]
    async fn a_changed_or_cut_file_does_not_open() {
        let spool = spool("tamper");
        let message = vec![7_u8; 2 * CHUNK + 5];
        let mut file = spooled(&spool, &message).await;
        let mut bytes = std::fs::read(file.path()).unwrap();
        bytes[CHUNK + TAG + 3] ^= 1;
        std::fs::write(file.path(), &bytes).unwrap();
        assert_eq!(
            file.read().await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );

        let mut file = spooled(&spool, &message).await;
        let whole = std::fs::read(file.path()).unwrap();
        std::fs::write(file.path(), &whole[..2 * (CHUNK + TAG)]).unwrap();
        assert!(file.read().await.is_err(), "the last chunk cut off");
        let _ = std::fs::remove_dir_all(&spool.dir);
    }

    #[tokio::test]
    async fn leftovers_are_cleared_and_nothing_else() {
        let spool = spool("leftovers");
        let kept = spooled(&spool, b"x").await;
        std::fs::write(spool.dir.join("other"), b"not ours").unwrap();
        std::mem::forget(kept);
        assert_eq!(spool.clear_leftovers().unwrap(), 1);
        assert!(spool.dir.join("other").exists());
        let _ = std::fs::remove_dir_all(&spool.dir);
    }

    #[test]
    fn a_directory_of_another_user_or_open_to_others_is_refused() {
        assert!(judge_dir(true, 1000, 0o40700, 1000).is_ok());
        assert!(matches!(
            judge_dir(true, 0, 0o40700, 1000),
            Err(SpoolDirError::OtherOwner {
                owner: 0,
                ours: 1000
            })
        ));
        for wider in [0o40750, 0o40705, 0o40777, 0o41777] {
            assert!(
                matches!(
                    judge_dir(true, 1000, wider, 1000),
                    Err(SpoolDirError::TooOpen { mode }) if mode == wider & 0o7777
                ),
                "{wider:o}"
            );
        }
        assert!(matches!(
            judge_dir(false, 1000, 0o100600, 1000),
            Err(SpoolDirError::NotADirectory)
        ));
    }

    fn scratch(under: &Path, name: &str) -> PathBuf {
        let dir = under.join(format!(
            "sealpost-spool-check-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_directory_is_made_0700_and_refused_once_opened_or_given_away() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch(Path::new(env!("CARGO_MANIFEST_DIR")), "mode");
        let checked = check_spool_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o700, "created {mode:o}");
        assert!(!checked.on_tmpfs, "the workspace is on disk");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = check_spool_dir(&dir).unwrap_err();
        assert!(
            matches!(error, SpoolDirError::TooOpen { mode: 0o755 }),
            "{error}"
        );
        assert!(error.to_string().contains("0755"), "{error}");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let ours = nix::unistd::geteuid().as_raw();
        // Root can hand it to another user; anyone else finds one in `/`.
        let given_away = if ours == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            dir.clone()
        } else {
            PathBuf::from("/")
        };
        let error = check_spool_dir(&given_away).unwrap_err();
        assert!(
            matches!(error, SpoolDirError::OtherOwner { ours: o, .. } if o == ours),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `/dev/shm` is tmpfs on Linux.
    #[test]
    fn a_directory_on_tmpfs_is_reported() {
        let dir = scratch(Path::new("/dev/shm"), "tmpfs");
        assert_eq!(check_spool_dir(&dir).unwrap(), SpoolDir { on_tmpfs: true });
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn spool_files_take_their_sealed_size_of_the_budget_and_give_it_back() {
        let dir = spool("budget").dir;
        let spool = Spool::new(&dir, CHUNK, 3 * (CHUNK + TAG));
        let mut first = SpoolWriter::create(&spool).await.unwrap();
        let mut two_chunks = vec![1_u8; 2 * CHUNK];
        first.write_full_chunks(&mut two_chunks).await.unwrap();
        assert_eq!(spool.budget.in_use(), 2 * (CHUNK + TAG));
        assert!(spool.has_room_for(CHUNK - TAG));
        assert!(!spool.has_room_for(CHUNK + 1), "over what is left");

        let mut second = SpoolWriter::create(&spool).await.unwrap();
        let mut two_more = vec![2_u8; 2 * CHUNK];
        let error = second.write_full_chunks(&mut two_more).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::QuotaExceeded);
        assert_eq!(spool.budget.in_use(), 3 * (CHUNK + TAG));
        drop(second);
        assert_eq!(spool.budget.in_use(), 2 * (CHUNK + TAG));

        let mut file = first.finish(b"tail").await.unwrap();
        assert_eq!(spool.budget.in_use(), 3 * (CHUNK + TAG) - CHUNK + 4);
        let mut expected = vec![1_u8; 2 * CHUNK];
        expected.extend_from_slice(b"tail");
        assert_eq!(file.read().await.unwrap(), expected);
        drop(file);
        assert_eq!(spool.budget.in_use(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
