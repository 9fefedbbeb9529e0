//! `GET /events/stream`: the account's events as server-sent events, in
//! commit order, resumable, kept 24 hours, five streams per account.

use chrono::TimeDelta;
use diesel_async::RunQueryDsl;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Api, SignedIn, new_keys};

/// One server-sent frame: its `id:`, `event:` and `data:` (JSON).
#[derive(Debug)]
struct Frame {
    id: Option<String>,
    event: Option<String>,
    data: Option<Value>,
}

/// An open stream, read frame by frame.
struct Stream {
    response: reqwest::Response,
    buffer: String,
}

impl Stream {
    /// The next frame holding data (id-only frames and comments skipped).
    async fn next_event(&mut self) -> Frame {
        loop {
            let frame = self.next_frame().await;
            if frame.data.is_some() {
                return frame;
            }
        }
    }

    /// The next frame, comments included (as a frame with nothing).
    async fn next_frame(&mut self) -> Frame {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let text: String = self.buffer.drain(..end + 2).collect();
                let mut frame = Frame {
                    id: None,
                    event: None,
                    data: None,
                };
                for line in text.lines() {
                    if let Some(id) = line.strip_prefix("id: ") {
                        frame.id = Some(id.to_owned());
                    } else if let Some(event) = line.strip_prefix("event: ") {
                        frame.event = Some(event.to_owned());
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        frame.data = Some(serde_json::from_str(data).expect("data is JSON"));
                    }
                }
                return frame;
            }
            let chunk = self
                .response
                .chunk()
                .await
                .expect("stream read")
                .expect("the stream stays open");
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }

    /// The first frame of a stream started now: its position only.
    async fn start_id(&mut self) -> String {
        let frame = self.next_frame().await;
        assert!(frame.data.is_none(), "{frame:?}");
        frame.id.expect("a stream started now says where")
    }
}

async fn open_stream(
    api: &Api,
    token: &str,
    last: Option<&str>,
) -> Result<Stream, (StatusCode, Value)> {
    let mut request = reqwest::Client::new()
        .get(api.app.url("/events/stream"))
        .bearer_auth(token);
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last);
    }
    let response = request.send().await.expect("request sent");
    let status = response.status();
    if status != StatusCode::OK {
        let body = response.json().await.unwrap_or(Value::Null);
        return Err((status, body));
    }
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    Ok(Stream {
        response,
        buffer: String::new(),
    })
}

async fn follow(api: &Api, token: &str) -> Stream {
    let mut stream = open_stream(api, token, None).await.expect("stream opens");
    stream.start_id().await;
    stream
}

/// The type and payload of the next event, checked to carry those only.
async fn next(stream: &mut Stream) -> (String, Value) {
    let frame = stream.next_event().await;
    let data = frame.data.unwrap();
    let object = data.as_object().unwrap();
    assert_eq!(object.len(), 2, "{data}");
    let kind = data["type"].as_str().unwrap().to_owned();
    assert_eq!(frame.event.as_deref(), Some(kind.as_str()));
    assert!(frame.id.is_some());
    (kind, data["payload"].clone())
}

async fn address(api: &Api, owner: &SignedIn, id: &str) {
    api.create_address(&owner.token, id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_sees_each_event_once_in_commit_order() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let mut stream = follow(&api, &owner.token).await;

    api.keyed_address(&owner, &keys, "ibx_stream01", "streamone")
        .await;
    let message = api.deliver(&owner, "ibx_stream01").await;
    api.pair(&owner.token, "wkr_stream01").await;
    let assigned = api
        .post(
            "/workers/wkr_stream01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_stream01" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);
    // A change after the others: the next frame is its event, so none of
    // the earlier ones came twice.
    address(&api, &owner, "ibx_stream02").await;

    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(next(&mut stream).await);
    }
    assert_eq!(
        seen,
        vec![
            (
                "inbox.created".to_owned(),
                json!({ "inboxId": "ibx_stream01" })
            ),
            (
                "message.received".to_owned(),
                json!({ "messageId": message, "inboxId": "ibx_stream01" })
            ),
            (
                "worker.paired".to_owned(),
                json!({ "workerId": "wkr_stream01", "kind": "device" })
            ),
            (
                "inbox.assigned".to_owned(),
                json!({ "workerId": "wkr_stream01", "inboxId": "ibx_stream01" })
            ),
            (
                "inbox.created".to_owned(),
                json!({ "inboxId": "ibx_stream02" })
            ),
        ]
    );
    drop(stream);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reconnect_with_last_event_id_misses_nothing() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.set_plan(&owner.account_id, "operator").await;
    let mut stream = follow(&api, &owner.token).await;
    address(&api, &owner, "ibx_resume01").await;
    let first = stream.next_event().await;
    assert_eq!(first.data.unwrap()["payload"]["inboxId"], "ibx_resume01");
    drop(stream);

    address(&api, &owner, "ibx_resume02").await;
    address(&api, &owner, "ibx_resume03").await;
    let mut resumed = open_stream(&api, &owner.token, first.id.as_deref())
        .await
        .expect("stream resumes");
    address(&api, &owner, "ibx_resume04").await;
    for expected in ["ibx_resume02", "ibx_resume03", "ibx_resume04"] {
        let (kind, payload) = next(&mut resumed).await;
        assert_eq!(
            (kind.as_str(), &payload),
            ("inbox.created", &json!({ "inboxId": expected }))
        );
    }

    let refused = open_stream(&api, &owner.token, Some("not-an-id")).await;
    let (status, body) = refused.err().expect("a made-up id is refused");
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "invalid_field");
    drop(resumed);
    api.app.stop().await;
}

/// An event written before another but committed after it still comes:
/// the stream follows commit order, not the order events were numbered.
#[tokio::test(flavor = "multi_thread")]
async fn an_event_committing_late_is_not_skipped() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.keyed_address(&owner, &keys, "ibx_early01", "earlyone")
        .await;
    let mut stream = follow(&api, &owner.token).await;

    // A change's transaction writes its event and holds on before COMMIT.
    let mut late = api.app.db.connect().await;
    for statement in [
        "BEGIN".to_owned(),
        format!(
            "INSERT INTO events (id, account_id, type, payload, created_at) \
             VALUES ('evt_late0000000000000000001', '{}', 'inbox.deleted', \
                     '{{\"inboxId\": \"ibx_late01\"}}', now())",
            owner.account_id
        ),
    ] {
        diesel::sql_query(statement)
            .execute(&mut late)
            .await
            .unwrap();
    }
    // Mail delivered meanwhile commits first, and the stream reads it...
    let message = api.deliver(&owner, "ibx_early01").await;
    let (kind, payload) = next(&mut stream).await;
    assert_eq!(kind, "message.received");
    assert_eq!(payload["messageId"], message.as_str());
    // ...then the first change commits, and more mail after it: the
    // stream sends the late event, then the new mail.
    diesel::sql_query("COMMIT")
        .execute(&mut late)
        .await
        .unwrap();
    let after = api.deliver(&owner, "ibx_early01").await;
    let (kind, payload) = next(&mut stream).await;
    assert_eq!(
        (kind.as_str(), &payload),
        ("inbox.deleted", &json!({ "inboxId": "ibx_late01" }))
    );
    let (kind, payload) = next(&mut stream).await;
    assert_eq!(kind, "message.received");
    assert_eq!(payload["messageId"], after.as_str());
    drop(stream);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn events_stay_readable_a_day_then_an_older_id_gets_a_resync_frame() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let mut stream = follow(&api, &owner.token).await;
    address(&api, &owner, "ibx_old01").await;
    let old = stream.next_event().await.id.unwrap();
    address(&api, &owner, "ibx_old02").await;
    drop(stream);
    // Webhooks and push are done with them.
    let mut conn = api.app.db.connect().await;
    diesel::sql_query("UPDATE events SET fanned_out = true, pushed = true")
        .execute(&mut conn)
        .await
        .unwrap();

    // The hourly sweep within the day leaves them to the stream.
    api.app.clock.advance(TimeDelta::hours(23));
    api.sweeps().run_once().await;
    let mut resumed = open_stream(&api, &owner.token, Some(&old)).await.unwrap();
    let (_, payload) = next(&mut resumed).await;
    assert_eq!(payload, json!({ "inboxId": "ibx_old02" }));
    drop(resumed);

    // Past the day they go, and a stream resuming before them is told.
    api.app.clock.advance(TimeDelta::hours(2));
    api.sweeps().run_once().await;
    let mut resumed = open_stream(&api, &owner.token, Some(&old)).await.unwrap();
    let resync = resumed.next_event().await;
    assert_eq!(resync.event.as_deref(), Some("resync"));
    assert_eq!(
        resync.data.unwrap(),
        json!({ "type": "resync", "payload": {} })
    );
    // ...and goes on from now.
    address(&api, &owner, "ibx_old03").await;
    let (_, payload) = next(&mut resumed).await;
    assert_eq!(payload, json!({ "inboxId": "ibx_old03" }));
    drop(resumed);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_sees_only_its_own_addresses_events() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    api.keyed_address(&owner, &keys, "ibx_mine01", "mineone")
        .await;
    api.keyed_address(&owner, &keys, "ibx_other01", "otherone")
        .await;
    let device = api.pair(&owner.token, "wkr_mine01").await;
    let assigned = api
        .post(
            "/workers/wkr_mine01/inboxes",
            Some(&owner.token),
            json!({ "inboxId": "ibx_mine01" }),
        )
        .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.body);
    let mut stream = follow(&api, &device.credential).await;

    api.deliver(&owner, "ibx_other01").await;
    let mine = api.deliver(&owner, "ibx_mine01").await;
    let (kind, payload) = next(&mut stream).await;
    assert_eq!(kind, "message.received");
    assert_eq!(
        payload,
        json!({ "messageId": mine, "inboxId": "ibx_mine01" })
    );
    drop(stream);
    api.app.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_account_holds_at_most_five_streams_at_once() {
    let api = Api::spawn().await;
    let (_, keys) = new_keys();
    let owner = api.register(&keys).await;
    let (_, other_keys) = new_keys();
    let other = api.register(&other_keys).await;
    let mut open = Vec::new();
    for _ in 0..5 {
        open.push(follow(&api, &owner.token).await);
    }
    let (status, body) = open_stream(&api, &owner.token, None)
        .await
        .err()
        .expect("the sixth is refused");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["error"]["code"], "rate_limited");
    // Another account's streams are its own.
    let theirs = follow(&api, &other.token).await;
    drop(theirs);
    drop(open);
    api.app.stop().await;
}
