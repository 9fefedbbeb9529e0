//! Cursor pagination (docs/api.md "Pagination" and "Limits").
//!
//! Lists are newest first, ordered by `(createdAt, id)` descending. A cursor
//! names the last item of a page; the next page holds what sorts after it.
//! The cursor is opaque to clients: base64url of `<unix millis>:<id>`.

use data_encoding::BASE64URL_NOPAD;

use crate::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLimits {
    pub default: u32,
    pub max: u32,
}

impl PageLimits {
    /// Devices, messages, webhook deliveries.
    pub const STANDARD: PageLimits = PageLimits {
        default: 50,
        max: 200,
    };
    /// The activity log.
    pub const ACTIVITY: PageLimits = PageLimits {
        default: 20,
        max: 200,
    };
    /// The staff lists of tickets and abuse reports.
    pub const STAFF_LISTS: PageLimits = PageLimits {
        default: 500,
        max: 500,
    };
    /// The staff audit log.
    pub const STAFF_AUDIT: PageLimits = PageLimits {
        default: 100,
        max: 200,
    };
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub at: Timestamp,
    pub id: String,
}

impl Cursor {
    pub fn encode(&self) -> String {
        BASE64URL_NOPAD.encode(format!("{}:{}", self.at.unix_millis(), self.id).as_bytes())
    }

    pub fn decode(text: &str) -> Option<Cursor> {
        let raw = BASE64URL_NOPAD.decode(text.as_bytes()).ok()?;
        let raw = String::from_utf8(raw).ok()?;
        let (millis, id) = raw.split_once(':')?;
        let at = Timestamp::from_unix_millis(millis.parse().ok()?)?;
        if id.is_empty() {
            return None;
        }
        Some(Cursor {
            at,
            id: id.to_owned(),
        })
    }
}

/// A position in commit order: the cursor of `GET /inboxes/:id/messages/wait`.
/// `seq` numbers commit batches in the order they became visible; `id` is
/// the last message seen of batch `seq`, or `None` when all of it counts as
/// seen. Opaque to clients: base64url of `c<seq>` or `c<seq>:<id>`, which
/// never decodes as a [`Cursor`] (whose text starts with a number).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitCursor {
    pub seq: u64,
    pub id: Option<String>,
}

impl CommitCursor {
    pub fn encode(&self) -> String {
        let text = match &self.id {
            Some(id) => format!("c{}:{id}", self.seq),
            None => format!("c{}", self.seq),
        };
        BASE64URL_NOPAD.encode(text.as_bytes())
    }

    pub fn decode(text: &str) -> Option<CommitCursor> {
        let raw = BASE64URL_NOPAD.decode(text.as_bytes()).ok()?;
        let raw = String::from_utf8(raw).ok()?;
        let rest = raw.strip_prefix('c')?;
        let (seq, id) = match rest.split_once(':') {
            Some((_, "")) => return None,
            Some((seq, id)) => (seq, Some(id.to_owned())),
            None => (rest, None),
        };
        if !seq.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(CommitCursor {
            seq: seq.parse().ok()?,
            id,
        })
    }
}

/// A position in the account's event stream (`GET /events/stream`): the
/// commit number of the change that wrote the event, then the event's own
/// insert number within it. Events are read in this order and never appear
/// below a position once read past (docs/architecture.md, "Commit order").
/// Opaque to clients: base64url of `e<commit>.<seq>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamPosition {
    pub commit: u64,
    pub seq: u64,
}

impl StreamPosition {
    pub fn encode(&self) -> String {
        BASE64URL_NOPAD.encode(format!("e{}.{}", self.commit, self.seq).as_bytes())
    }

    pub fn decode(text: &str) -> Option<StreamPosition> {
        let raw = BASE64URL_NOPAD.decode(text.trim().as_bytes()).ok()?;
        let raw = String::from_utf8(raw).ok()?;
        let (commit, seq) = raw.strip_prefix('e')?.split_once('.')?;
        let number = |text: &str| {
            (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                .then(|| text.parse::<u64>().ok())
                .flatten()
        };
        Some(StreamPosition {
            commit: number(commit)?,
            seq: number(seq)?,
        })
    }
}

/// Which query field was out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    #[error("limit must be a whole number from 1 to {0}")]
    Limit(u32),
    #[error("cursor is not one this service handed out")]
    Cursor,
}

impl PageError {
    pub fn field(&self) -> &'static str {
        match self {
            PageError::Limit(_) => "limit",
            PageError::Cursor => "cursor",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u32,
    pub after: Option<Cursor>,
}

impl PageRequest {
    pub fn parse(
        limit: Option<&str>,
        cursor: Option<&str>,
        limits: PageLimits,
    ) -> Result<Self, PageError> {
        let limit = match limit {
            None => limits.default,
            Some(text) => match text.parse::<u32>() {
                Ok(n) if (1..=limits.max).contains(&n) => n,
                _ => return Err(PageError::Limit(limits.max)),
            },
        };
        let after = match cursor {
            None | Some("") => None,
            Some(text) => Some(Cursor::decode(text).ok_or(PageError::Cursor)?),
        };
        Ok(Self { limit, after })
    }

    /// How many rows to fetch: one more than the page, to know whether another follows.
    pub fn fetch_limit(&self) -> i64 {
        i64::from(self.limit) + 1
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// Builds a page from up to `fetch_limit()` rows in list order.
    pub fn from_rows(mut rows: Vec<T>, request: &PageRequest, key: impl Fn(&T) -> Cursor) -> Self {
        let limit = request.limit as usize;
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|last| key(last).encode())
        } else {
            None
        };
        Page {
            items: rows,
            next_cursor,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_positions_round_trip_and_refuse_other_cursors() {
        for position in [
            StreamPosition { commit: 0, seq: 0 },
            StreamPosition { commit: 41, seq: 7 },
            StreamPosition {
                commit: u64::MAX,
                seq: u64::MAX,
            },
        ] {
            assert_eq!(StreamPosition::decode(&position.encode()), Some(position));
        }
        let commit = CommitCursor { seq: 3, id: None }.encode();
        assert_eq!(StreamPosition::decode(&commit), None);
        for garbage in ["e1", "e.1", "e1.", "e-1.2", "x1.2", "e1.2.3"] {
            assert_eq!(
                StreamPosition::decode(&BASE64URL_NOPAD.encode(garbage.as_bytes())),
                None,
                "{garbage}"
            );
        }
        assert!(StreamPosition { commit: 1, seq: 9 } < StreamPosition { commit: 2, seq: 1 });
    }

    #[test]
    fn limit_defaults_and_bounds() {
        let page = PageRequest::parse(None, None, PageLimits::ACTIVITY).unwrap();
        assert_eq!(page.limit, 20);
        assert_eq!(
            PageRequest::parse(Some("201"), None, PageLimits::STANDARD),
            Err(PageError::Limit(200))
        );
        assert_eq!(
            PageRequest::parse(Some("0"), None, PageLimits::STANDARD),
            Err(PageError::Limit(200))
        );
        assert_eq!(
            PageRequest::parse(Some("x"), None, PageLimits::STANDARD),
            Err(PageError::Limit(200))
        );
    }

    #[test]
    fn cursor_round_trips_and_rejects_garbage() {
        let cursor = Cursor {
            at: Timestamp::parse("2026-11-22T01:02:03.004Z").unwrap(),
            id: "msg_abc".into(),
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Some(cursor));
        assert_eq!(Cursor::decode("%%%"), None);
        assert_eq!(
            PageRequest::parse(None, Some("bm9wZQ"), PageLimits::STANDARD),
            Err(PageError::Cursor)
        );
    }

    #[test]
    fn commit_cursor_round_trips_and_never_reads_as_a_list_cursor() {
        for cursor in [
            CommitCursor {
                seq: 42,
                id: Some("msg_abc".into()),
            },
            CommitCursor { seq: 7, id: None },
        ] {
            let text = cursor.encode();
            assert_eq!(Cursor::decode(&text), None);
            assert_eq!(CommitCursor::decode(&text), Some(cursor));
        }
        let list = Cursor {
            at: Timestamp::parse("2026-11-22T01:02:03.004Z").unwrap(),
            id: "msg_abc".into(),
        };
        assert_eq!(CommitCursor::decode(&list.encode()), None);
        for garbage in ["c", "c:", "c1:", "c-1", "c+1", "cx:msg"] {
            assert_eq!(
                CommitCursor::decode(&BASE64URL_NOPAD.encode(garbage.as_bytes())),
                None,
                "{garbage}"
            );
        }
    }

    #[test]
    fn next_cursor_only_when_more_rows_exist() {
        let request = PageRequest::parse(Some("2"), None, PageLimits::STANDARD).unwrap();
        let at = Timestamp::parse("2026-11-22T00:00:00Z").unwrap();
        let key = |id: &&str| Cursor {
            at,
            id: id.to_string(),
        };
        let full = Page::from_rows(vec!["c", "b", "a"], &request, key);
        assert_eq!(full.items, vec!["c", "b"]);
        let next = Cursor::decode(full.next_cursor.as_deref().unwrap()).unwrap();
        assert_eq!(next.id, "b");
        let last = Page::from_rows(vec!["a"], &request, key);
        assert_eq!(last.next_cursor, None);
    }
}
