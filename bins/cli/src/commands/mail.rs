//! `mail list`, `mail read`, `mail wait`, `mail attachment`, `mail mark`,
//! `mail star`, `mail move`, `mail delete`, `mail trash empty`: the mail,
//! opened on this machine, as the operator (keys derived from the recovery
//! phrase) or as this machine's paired device (keys from its key bundle);
//! `mail send`: mail out, as the operator.

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use sealpost_client::folders::{Deletion, Folder, MailFilter};
use sealpost_client::sealing::{self, AddressSecrets, KeyBundle, MessageContent};
use sealpost_client::sending::SendMailRequest;
use sealpost_client::types::{Message, PageParams};
use sealpost_client::{Client, ClientError, MAX_WAIT_SECONDS};
use sealpost_kernel::{AddressId, MessageId};
use sealpost_seal::{AccountKeys, StaticSecret};
use tokio::time::Instant;

use super::Ctx;
use super::agent::open_key_bundle;
use super::vault::{self, resolve_address};
use crate::cli::{ShowArgs, StoredCredential};
use crate::state::{DeviceState, StateDir, StoredSession};
use crate::{escape, mailtext, output};

/// The page size `mail list --all` follows the pages with, when `--limit`
/// does not say: the largest the service allows.
const ALL_PAGE: u32 = 200;
/// How long `mail wait` pauses after an answer worth retrying, when the
/// service does not say.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Who reads the mail, with the credential the client carries.
enum Reader {
    Operator(StoredSession),
    Device(DeviceState),
}

/// The keys mail is opened with.
enum MailKeys {
    /// Derived from the phrase: every address of the account; and the keys
    /// of addresses other accounts share with it (team grants).
    Operator(AccountKeys, KeyBundle),
    /// The device's key bundle: the addresses assigned to it.
    Device(KeyBundle),
}

impl AddressSecrets for MailKeys {
    fn secret_for(&self, address_id: &AddressId, epoch: u32) -> Option<StaticSecret> {
        match self {
            // A shared address's key is the owner's: the grant's, never one
            // derived from this account's phrase.
            Self::Operator(keys, shared) => shared
                .secret_for(address_id, epoch)
                .or_else(|| keys.secret_for(address_id, epoch)),
            Self::Device(bundle) => bundle.secret_for(address_id, epoch),
        }
    }
}

/// Which stored credential the `mail` commands use without `--device`: the
/// operator session, or the device when only `device.json` exists.
pub fn session_else_device(state: &StateDir) -> Result<StoredCredential> {
    if state.load_session()?.is_none() && state.load_device()?.is_some() {
        Ok(StoredCredential::Device)
    } else {
        Ok(StoredCredential::Session)
    }
}

fn reader(ctx: &Ctx, device: bool) -> Result<(Reader, Client)> {
    if device || session_else_device(&ctx.state)? == StoredCredential::Device {
        let (device, client) = ctx.device()?;
        Ok((Reader::Device(device), client))
    } else {
        let (session, client) = ctx.signed_in()?;
        Ok((Reader::Operator(session), client))
    }
}

/// The keys: the operator's from the phrase (checked against the session),
/// the device's from its key bundle.
async fn unlock(ctx: &Ctx, reader: &Reader, client: &Client) -> Result<MailKeys> {
    match reader {
        Reader::Operator(session) => {
            let keys = vault::unlock(session)?;
            let memberships = client.memberships().await?;
            let shared = sealpost_client::teams::shared_keys(&keys, &memberships);
            Ok(MailKeys::Operator(keys, shared))
        }
        Reader::Device(device) => match open_key_bundle(ctx, device, client).await? {
            Some((bundle, _)) => Ok(MailKeys::Device(bundle)),
            None => bail!(
                "this device has no key bundle yet: the operator sends one with `sealpost address assign`"
            ),
        },
    }
}

fn parse_message_id(text: &str) -> Result<MessageId> {
    MessageId::parse(text.trim()).with_context(|| format!("{text:?} is not a message id (msg_...)"))
}

fn open(keys: &MailKeys, message: &Message) -> Result<MessageContent> {
    sealing::open_message(keys, message)
        .with_context(|| format!("message {} cannot be opened", message.id))
}

/// "1 attachment", "2 attachments".
fn attachments(count: usize) -> String {
    if count == 1 {
        "1 attachment".to_owned()
    } else {
        format!("{count} attachments")
    }
}

/// A size for people: bytes, KiB or MiB.
fn size(bytes: u64) -> String {
    #[allow(
        clippy::cast_precision_loss,
        reason = "one decimal is shown; sizes stay far below 2^52"
    )]
    let value = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", value / 1024.0)
    } else {
        format!("{:.1} MiB", value / (1024.0 * 1024.0))
    }
}

/// One line of `mail list`: id, time, folder, read flag, star, then the
/// sender (the recipients of sent mail), subject and attachment count.
fn summary(keys: &MailKeys, message: &Message) -> String {
    let flag = if message.read { "read" } else { "unread" };
    let star = if message.starred { "starred" } else { "" };
    let head = format!(
        "{}  {}  {:<7}  {flag:<6}  {star:<7}",
        message.id,
        message.received_at,
        message.folder.as_str()
    );
    match sealing::open_message(keys, message) {
        Err(err) => format!("{head}  (unreadable: {err})"),
        Ok(content) => {
            let who = if message.outgoing {
                format!("to {}", escape::line(&content.to.join(", ")))
            } else {
                escape::line(content.from.as_deref().unwrap_or("-")).into_owned()
            };
            let subject = escape::line(content.subject.as_deref().unwrap_or("(no subject)"));
            let count = content.attachments.len();
            if count == 0 {
                format!("{head}  {who}  {subject}")
            } else {
                format!("{head}  {who}  {subject}  ({})", attachments(count))
            }
        }
    }
}

/// The filters of `mail list` besides the address.
pub struct ListFilter {
    pub folder: Option<String>,
    pub starred: bool,
    pub unread: bool,
}

fn parse_folder(text: &str) -> Result<Folder> {
    text.parse::<Folder>().map_err(anyhow::Error::new)
}

/// Lists mail newest first, across addresses or in one; `--all` follows
/// the pages.
pub async fn list(
    ctx: &Ctx,
    device: bool,
    address_id: Option<&str>,
    filter: &ListFilter,
    limit: Option<u32>,
    all: bool,
) -> Result<()> {
    let (reader, client) = reader(ctx, device)?;
    let keys = unlock(ctx, &reader, &client).await?;
    let address = match address_id {
        Some(text) => Some(resolve_address(&client, text).await?),
        None => None,
    };
    let query = MailFilter {
        folder: filter.folder.as_deref().map(parse_folder).transpose()?,
        address_id: address.clone(),
        starred: filter.starred.then_some(true),
        unread: filter.unread.then_some(true),
    };
    let mut page = PageParams {
        limit: if all { limit.or(Some(ALL_PAGE)) } else { limit },
        cursor: None,
    };
    let mut shown = 0usize;
    loop {
        let answer = client.list_mail(&query, &page).await?;
        for message in &answer.messages {
            outln!("{}", summary(&keys, message));
        }
        shown += answer.messages.len();
        match page.next(answer.next_cursor.as_deref()) {
            // Nobody reads the rest (`| head`): fetch no more pages.
            Some(_) if output::stdout_closed() => break,
            Some(next) if all => page = next,
            Some(_) => {
                outln!("More mail is listed with `--all`.");
                break;
            }
            None => break,
        }
    }
    if shown == 0 {
        let place = match (&address, query.folder) {
            (Some(address), Some(folder)) => format!(" in {address} ({folder})"),
            (Some(address), None) => format!(" in {address}"),
            (None, Some(folder)) => format!(" in {folder}"),
            (None, None) => String::new(),
        };
        outln!("No mail{place}.");
    }
    Ok(())
}

/// A message as `read` shows it: headers, attachments and the body; with
/// `--codes`, only its codes and links, one per line. What the sender wrote
/// is escaped (`escape`) unless `--raw`.
fn render(keys: &MailKeys, message: &Message, args: ShowArgs) -> Result<String> {
    let content = open(keys, message)?;
    let line = |text: &str| -> String {
        if args.raw {
            text.to_owned()
        } else {
            escape::line(text).into_owned()
        }
    };
    let mut out = String::new();
    if args.codes {
        let found = mailtext::codes_and_links(
            content.subject.as_deref(),
            content.text.as_deref(),
            content.html.as_deref(),
        );
        if found.codes.is_empty() && found.links.is_empty() {
            errln!("No codes or links in {}.", message.id);
        }
        for item in found.codes.iter().chain(&found.links) {
            out.push_str(&line(item));
            out.push('\n');
        }
        return Ok(out);
    }
    let mut header = |name: &str, value: &str| out.push_str(&format!("{name:<10}  {value}\n"));
    header("Message", message.id.as_str());
    header("Received", &message.received_at.to_string());
    header("From", &line(content.from.as_deref().unwrap_or("-")));
    if !content.to.is_empty() {
        header("To", &line(&content.to.join(", ")));
    }
    if !content.cc.is_empty() {
        header("Cc", &line(&content.cc.join(", ")));
    }
    if let Some(reply_to) = &content.reply_to {
        header("Reply-To", &line(reply_to));
    }
    if let Some(date) = &content.date {
        header("Date", &line(date));
    }
    header(
        "Subject",
        &line(content.subject.as_deref().unwrap_or("(no subject)")),
    );
    for attachment in &content.attachments {
        let name = line(attachment.filename.as_deref().unwrap_or("(no name)"));
        let kept = if attachment.stored {
            ""
        } else {
            "  (over 20 MB: not kept)"
        };
        header(
            "Attachment",
            &format!(
                "{}  {name}  {}  {}{kept}",
                attachment.index,
                line(&attachment.content_type),
                size(attachment.size_bytes)
            ),
        );
    }
    let body = match (args.html, &content.text, &content.html) {
        (true, _, Some(html)) => html.clone(),
        (true, _, None) => "(no HTML body)".to_owned(),
        (false, Some(text), _) => text.clone(),
        (false, None, Some(html)) => mailtext::html_to_text(html),
        (false, None, None) => "(no body)".to_owned(),
    };
    let body = if args.raw {
        Cow::Borrowed(body.as_str())
    } else {
        escape::block(&body)
    };
    out.push('\n');
    out.push_str(body.trim_end());
    out.push('\n');
    Ok(out)
}

/// Marks shown mail read unless `--keep-unread`. The message was shown
/// already, so a failure here is a warning, not the command's failure.
async fn mark_shown(client: &Client, message: &Message, args: ShowArgs) {
    if args.keep_unread || message.read {
        return;
    }
    if let Err(err) = client.mark_read(&message.id, true).await {
        errln!(
            "warning: {} could not be marked read: {} ({})",
            message.id,
            escape::line(&err.to_string()),
            err.code()
        );
    }
}

/// Shows one message (`GET /messages/{id}`, one object read), then marks it
/// read.
pub async fn read(ctx: &Ctx, device: bool, message_id: &str, args: ShowArgs) -> Result<()> {
    let id = parse_message_id(message_id)?;
    let (reader, client) = reader(ctx, device)?;
    let keys = unlock(ctx, &reader, &client).await?;
    let message = client.get_message(&id).await?;
    // Shown in one piece; a reader that stops early (`head -1`) had what it
    // wanted, and the message is still marked read.
    output::stdout_bytes(render(&keys, &message, args)?.as_bytes());
    mark_shown(&client, &message, args).await;
    Ok(())
}

/// An answer `mail wait` tries again after: a rate limit or the service's
/// own failure. Not reaching the service at all is reported at once, as
/// every command does.
fn worth_retrying(err: &ClientError) -> bool {
    matches!(err, ClientError::Api { status, .. } if *status == 429 || *status >= 500)
}

/// Long-polls `/wait` until there is unread mail, then shows it (oldest
/// first) as `read` does and marks it read. The first wait starts at the
/// beginning of the address, so unread mail already there is shown at once;
/// each answer's cursor moves past what was seen. A rate limit or a 5xx is
/// retried until the timeout, then reported; the service out of reach is
/// reported at once.
pub async fn wait(
    ctx: &Ctx,
    device: bool,
    address_id: &str,
    timeout: u64,
    args: ShowArgs,
) -> Result<()> {
    let (reader, client) = reader(ctx, device)?;
    let keys = unlock(ctx, &reader, &client).await?;
    let address = resolve_address(&client, address_id).await?;
    let deadline = Instant::now() + Duration::from_secs(timeout);
    let mut after: Option<String> = None;
    let mut failing: Option<ClientError> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now()).as_secs();
        let seconds = u32::try_from(left).unwrap_or(MAX_WAIT_SECONDS);
        match client
            .wait_for_messages(&address, after.as_deref(), seconds)
            .await
        {
            Ok(Some(answer)) => {
                failing = None;
                after = Some(answer.cursor);
                let unread: Vec<&Message> = answer.messages.iter().filter(|m| !m.read).collect();
                if !unread.is_empty() {
                    let shown = unread
                        .iter()
                        .map(|message| render(&keys, message, args))
                        .collect::<Result<Vec<_>>>()?;
                    let separator = if args.codes { "" } else { "\n" };
                    output::stdout_bytes(shown.join(separator).as_bytes());
                    for message in unread {
                        mark_shown(&client, message, args).await;
                    }
                    return Ok(());
                }
            }
            Ok(None) => failing = None,
            Err(err) if worth_retrying(&err) && Instant::now() < deadline => {
                if failing.is_none() {
                    errln!(
                        "note: {} ({}); trying again until the timeout",
                        escape::line(&err.to_string()),
                        err.code()
                    );
                }
                let pause = err
                    .retry_after()
                    .map_or(RETRY_AFTER, Duration::from_secs)
                    .min(deadline.saturating_duration_since(Instant::now()));
                failing = Some(err);
                tokio::time::sleep(pause).await;
            }
            Err(err) => return Err(err.into()),
        }
        if Instant::now() >= deadline {
            if let Some(err) = failing {
                return Err(anyhow::Error::new(err)
                    .context(format!("no answer about {address} within {timeout} s")));
            }
            bail!("no new mail in {address} within {timeout} s");
        }
    }
}

/// The name an attachment is saved under by default: the sealed file name
/// without any directory, control characters, bidi overrides or leading
/// dots, at most 200 bytes; `attachment-INDEX` when nothing usable is left.
fn safe_file_name(sealed: Option<&str>, index: u32) -> String {
    let name: String = sealed
        .and_then(|name| name.rsplit(['/', '\\']).next())
        .unwrap_or_default()
        .chars()
        .filter(|c| !escape::acts(*c))
        .collect();
    let name = name.trim().trim_start_matches('.').trim();
    if name.is_empty() {
        return format!("attachment-{index}");
    }
    const MAX: usize = 200;
    if name.len() <= MAX {
        return name.to_owned();
    }
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, ext)) if ext.len() <= 16 => (stem, format!(".{ext}")),
        _ => (name, String::new()),
    };
    let mut cut = MAX - extension.len();
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{extension}", &stem[..cut])
}

/// Writes `bytes` to a new file at `path` (mode 0600: it is decrypted
/// mail); an existing file is never replaced.
fn write_new_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => anyhow!(
                "{} already exists; not overwriting it (choose another name with -o)",
                path.display()
            ),
            _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
        })?;
    if let Err(e) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(anyhow::Error::new(e).context(format!("cannot write {}", path.display())));
    }
    Ok(())
}

/// Decrypts attachment `index` of a message to a file, or to stdout with
/// `-o -`.
pub async fn attachment(
    ctx: &Ctx,
    device: bool,
    message_id: &str,
    index: u32,
    output: Option<PathBuf>,
) -> Result<()> {
    let id = parse_message_id(message_id)?;
    let (reader, client) = reader(ctx, device)?;
    let keys = unlock(ctx, &reader, &client).await?;
    let message = client.get_message(&id).await?;
    let content = open(&keys, &message)?;
    let Some(info) = content.attachment(index) else {
        bail!(
            "message {id} has no attachment {index} (it has {})",
            attachments(content.attachments.len())
        );
    };
    if !info.stored {
        bail!("attachment {index} of {id} is over 20 MB: the service did not keep its bytes");
    }
    let default_name = safe_file_name(info.filename.as_deref(), index);
    let target = match output {
        Some(path) if path.as_os_str() == "-" => None,
        Some(path) if path.is_dir() => Some(path.join(&default_name)),
        Some(path) => Some(path),
        None => Some(PathBuf::from(&default_name)),
    };
    // Refuse before spending an object read on the download.
    if let Some(path) = &target
        && path.symlink_metadata().is_ok()
    {
        bail!(
            "{} already exists; not overwriting it (choose another name with -o)",
            path.display()
        );
    }
    let sealed = client.get_attachment(&id, index).await?;
    let bytes = sealing::open_attachment(&keys, &message, index, &sealed)
        .with_context(|| format!("attachment {index} of {id} cannot be opened"))?;
    match target {
        // The file's bytes as they are: the reader asked for them.
        None => output::stdout_bytes(&bytes),
        Some(path) => {
            write_new_file(&path, &bytes)?;
            outln!(
                "Saved attachment {index} of {id} ({}) to {}.",
                size(u64::try_from(bytes.len()).unwrap_or(u64::MAX)),
                escape::line(&path.display().to_string())
            );
        }
    }
    Ok(())
}

/// Marks a message read or unread; needs no keys.
pub async fn mark(ctx: &Ctx, device: bool, message_id: &str, read: bool) -> Result<()> {
    let id = parse_message_id(message_id)?;
    let (_, client) = reader(ctx, device)?;
    client.mark_read(&id, read).await?;
    let state = if read { "read" } else { "unread" };
    outln!("Marked {id} {state}.");
    Ok(())
}

/// `mail send`'s arguments.
pub struct Outgoing {
    pub from: String,
    pub from_name: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    pub text: Option<String>,
    pub text_file: Option<PathBuf>,
    pub html_file: Option<PathBuf>,
}

pub(super) fn read_body(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Sends mail from one of the account's addresses (the operator session).
pub async fn send(ctx: &Ctx, device: bool, outgoing: Outgoing) -> Result<()> {
    if device {
        bail!("a device cannot send mail; sending needs the operator session (`sealpost login`)");
    }
    let (_, client) = ctx.signed_in()?;
    let from = if outgoing.from.contains('@') {
        outgoing.from.trim().to_owned()
    } else {
        let id = resolve_address(&client, &outgoing.from).await?;
        client
            .list_addresses()
            .await?
            .addresses
            .into_iter()
            .find(|address| address.id == id)
            .map(|address| address.email_address)
            .ok_or_else(|| anyhow!("no address {id} here; `sealpost address list` shows them"))?
    };
    let text = match (outgoing.text, &outgoing.text_file) {
        (Some(text), _) => text,
        (None, Some(path)) => read_body(path)?,
        (None, None) => bail!("give the text with --text or --text-file"),
    };
    let html = outgoing.html_file.as_deref().map(read_body).transpose()?;
    let sent = client
        .send_mail(&SendMailRequest {
            from,
            from_name: outgoing.from_name,
            to: outgoing.to,
            cc: outgoing.cc,
            subject: outgoing.subject,
            text,
            html,
        })
        .await?;
    match sent.message_id {
        Some(id) => outln!("Sent. The copy {id} is in the sent folder."),
        None => outln!("Sent. No copy was kept: the address has no key."),
    }
    Ok(())
}

/// Stars a message or takes the star off; needs no keys.
pub async fn star(ctx: &Ctx, device: bool, message_id: &str, starred: bool) -> Result<()> {
    let id = parse_message_id(message_id)?;
    let (_, client) = reader(ctx, device)?;
    client.star(&id, starred).await?;
    if starred {
        outln!("Starred {id}.");
    } else {
        outln!("Took the star off {id}.");
    }
    Ok(())
}

/// Moves a message to another folder; needs no keys.
pub async fn move_to(ctx: &Ctx, device: bool, message_id: &str, folder: &str) -> Result<()> {
    let id = parse_message_id(message_id)?;
    let folder = parse_folder(folder)?;
    let (_, client) = reader(ctx, device)?;
    let moved = client.move_message(&id, folder).await?;
    outln!("{id} is in {}.", moved.folder);
    Ok(())
}

/// Moves a message to the trash, or deletes it from there for good.
pub async fn delete(ctx: &Ctx, device: bool, message_id: &str) -> Result<()> {
    let id = parse_message_id(message_id)?;
    let (_, client) = reader(ctx, device)?;
    match client.delete_message(&id).await? {
        Deletion::Trashed => {
            outln!("Moved {id} to the trash; deleting it again deletes it for good.");
        }
        Deletion::Deleted => outln!("Deleted {id} for good."),
    }
    Ok(())
}

/// Empties the trash (the operator session).
pub async fn empty_trash(ctx: &Ctx, device: bool) -> Result<()> {
    if device {
        bail!("only the operator empties the trash (`sealpost login`)");
    }
    let (_, client) = ctx.signed_in()?;
    let deleted = client.empty_trash().await?;
    let noun = if deleted == 1 { "message" } else { "messages" };
    outln!("Deleted {deleted} {noun} from the trash.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_file_names_never_leave_the_directory() {
        assert_eq!(safe_file_name(Some("notes.txt"), 0), "notes.txt");
        assert_eq!(safe_file_name(Some("../../etc/passwd"), 0), "passwd");
        assert_eq!(safe_file_name(Some("/abs/path/x.pdf"), 0), "x.pdf");
        assert_eq!(safe_file_name(Some("C:\\Users\\a\\y.doc"), 0), "y.doc");
        assert_eq!(safe_file_name(Some(".bashrc"), 0), "bashrc");
        assert_eq!(safe_file_name(Some("dir/.."), 3), "attachment-3");
        assert_eq!(safe_file_name(Some("a/"), 1), "attachment-1");
        assert_eq!(safe_file_name(Some("bad\nname\u{7}.txt"), 0), "badname.txt");
        assert_eq!(safe_file_name(Some("x\u{202e}fdp.exe"), 0), "xfdp.exe");
        assert_eq!(safe_file_name(None, 2), "attachment-2");
        let long = format!("{}.pdf", "é".repeat(300));
        let cut = safe_file_name(Some(&long), 0);
        assert!(cut.len() <= 200 && cut.ends_with(".pdf"), "{cut}");
    }

    #[test]
    fn sizes_and_counts_read_well() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(attachments(1), "1 attachment");
        assert_eq!(attachments(0), "0 attachments");
    }

    #[test]
    fn new_files_are_private_and_never_replace_one() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a.bin");
        write_new_file(&path, b"first").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let err = write_new_file(&path, b"second").unwrap_err();
        assert!(format!("{err}").contains("already exists"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
    }
}
