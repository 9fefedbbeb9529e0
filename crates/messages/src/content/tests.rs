use super::*;

fn crlf(text: &str) -> Vec<u8> {
    text.replace("\r\n", "\n")
        .replace('\n', "\r\n")
        .into_bytes()
}

#[test]
fn text_and_html_alternative() {
    let raw = crlf(
        "From: Alice Example <alice@example.com>\n\
         To: Bob <bob@mail.localhost>, carol@mail.localhost\n\
         Cc: \"Doe, Jane\" <jane@example.org>\n\
         Reply-To: replies@example.com\n\
         Subject: Hello there\n\
         Date: Tue, 1 Jul 2025 10:52:37 +0200\n\
         Message-ID: <abc.123@example.com>\n\
         MIME-Version: 1.0\n\
         Content-Type: multipart/alternative; boundary=\"alt\"\n\
         \n\
         --alt\n\
         Content-Type: text/plain; charset=utf-8\n\
         \n\
         Hi Bob, caf\u{e9}.\n\
         --alt\n\
         Content-Type: text/html; charset=utf-8\n\
         \n\
         <p>Hi Bob, caf\u{e9}.</p>\n\
         --alt--\n",
    );
    let parsed = parse_mail(&raw);
    let c = &parsed.content;
    assert_eq!(c.from.as_deref(), Some("Alice Example <alice@example.com>"));
    assert_eq!(
        c.to,
        vec!["Bob <bob@mail.localhost>", "carol@mail.localhost"]
    );
    assert_eq!(c.cc, vec!["\"Doe, Jane\" <jane@example.org>"]);
    assert_eq!(c.reply_to.as_deref(), Some("replies@example.com"));
    assert_eq!(c.subject.as_deref(), Some("Hello there"));
    assert_eq!(c.date.as_deref(), Some("2025-07-01T08:52:37.000Z"));
    assert_eq!(
        c.message_id_header.as_deref(),
        Some("<abc.123@example.com>")
    );
    assert_eq!(c.text.as_deref(), Some("Hi Bob, caf\u{e9}."));
    assert_eq!(c.html.as_deref(), Some("<p>Hi Bob, caf\u{e9}.</p>"));
    assert!(c.attachments.is_empty());
    assert!(parsed.attachments.is_empty());
}

#[test]
fn two_attachments_base64_and_quoted_printable_in_order() {
    let pdf: Vec<u8> = (0u8..=255).cycle().take(3000).collect();
    let pdf_b64 = data_encoding::BASE64_MIME.encode(&pdf);
    let raw = crlf(&format!(
        "From: sender@example.com\n\
         To: inbox@mail.localhost\n\
         Subject: files\n\
         MIME-Version: 1.0\n\
         Content-Type: multipart/mixed; boundary=\"mix\"\n\
         \n\
         preamble\n\
         --mix\n\
         Content-Type: text/plain; charset=us-ascii\n\
         \n\
         See attached.\n\
         --mix\n\
         Content-Type: application/pdf; name=\"=?UTF-8?Q?r=C3=A9port.pdf?=\"\n\
         Content-Disposition: attachment; filename=\"=?UTF-8?Q?r=C3=A9port.pdf?=\"\n\
         Content-Transfer-Encoding: base64\n\
         \n\
         {pdf_b64}\
         --mix\n\
         Content-Type: text/csv; charset=utf-8\n\
         Content-Disposition: attachment; filename*=utf-8''na%C3%AFve.csv\n\
         Content-Transfer-Encoding: quoted-printable\n\
         \n\
         a,b=3Dc,na=C3=AFve\n\
         1,2,3=\n\
         4\n\
         --mix--\n"
    ));
    let parsed = parse_mail(&raw);
    let c = &parsed.content;
    assert_eq!(c.text.as_deref(), Some("See attached."));
    assert_eq!(c.html, None);
    assert_eq!(c.attachments.len(), 2);

    let first = &c.attachments[0];
    assert_eq!(first.index, 0);
    assert_eq!(first.filename.as_deref(), Some("r\u{e9}port.pdf"));
    assert_eq!(first.content_type, "application/pdf");
    assert_eq!(first.size_bytes, 3000);
    assert!(first.stored);

    let second = &c.attachments[1];
    assert_eq!(second.index, 1);
    assert_eq!(second.filename.as_deref(), Some("na\u{ef}ve.csv"));
    assert_eq!(second.content_type, "text/csv");
    let csv = "a,b=c,na\u{ef}ve\r\n1,2,34";
    assert_eq!(second.size_bytes, csv.len() as u64);
    assert!(second.stored);

    assert_eq!(parsed.attachments.len(), 2);
    assert_eq!(parsed.attachments[0].index, 0);
    assert_eq!(parsed.attachments[0].bytes.as_deref(), Some(pdf.as_slice()));
    assert_eq!(parsed.attachments[1].index, 1);
    assert_eq!(parsed.attachments[1].bytes.as_deref(), Some(csv.as_bytes()));
}

#[test]
fn inline_image_in_related_counts_as_attachment() {
    let png = [0x89u8, b'P', b'N', b'G', 0, 1, 2, 3];
    let raw = crlf(&format!(
        "From: a@example.com\n\
         Content-Type: multipart/related; boundary=\"rel\"\n\
         \n\
         --rel\n\
         Content-Type: text/html\n\
         \n\
         <img src=\"cid:logo\">\n\
         --rel\n\
         Content-Type: image/png\n\
         Content-ID: <logo>\n\
         Content-Disposition: inline\n\
         Content-Transfer-Encoding: base64\n\
         \n\
         {}\n\
         --rel--\n",
        data_encoding::BASE64.encode(&png)
    ));
    let parsed = parse_mail(&raw);
    assert_eq!(
        parsed.content.html.as_deref(),
        Some("<img src=\"cid:logo\">")
    );
    assert_eq!(parsed.content.text, None);
    assert_eq!(parsed.content.attachments.len(), 1);
    let image = &parsed.content.attachments[0];
    assert_eq!((image.index, image.filename.as_deref()), (0, None));
    assert_eq!(image.content_type, "image/png");
    assert_eq!(image.size_bytes, png.len() as u64);
    assert_eq!(parsed.attachments[0].bytes.as_deref(), Some(&png[..]));
}

#[test]
fn attachment_over_twenty_megabytes_is_listed_but_not_stored() {
    let big = vec![0xA5u8; usize::try_from(ATTACHMENT_STORE_LIMIT).unwrap() + 1];
    let small = b"small one";
    let raw = [
        crlf(
            "From: a@example.com\n\
             Subject: big\n\
             Content-Type: multipart/mixed; boundary=\"b\"\n\
             \n\
             --b\n\
             Content-Type: text/plain\n\
             \n\
             body\n\
             --b\n\
             Content-Type: application/octet-stream\n\
             Content-Disposition: attachment; filename=\"big.bin\"\n\
             Content-Transfer-Encoding: base64\n\
             \n",
        ),
        data_encoding::BASE64_MIME.encode(&big).into_bytes(),
        crlf(&format!(
            "--b\n\
             Content-Type: application/octet-stream\n\
             Content-Disposition: attachment; filename=\"small.bin\"\n\
             Content-Transfer-Encoding: base64\n\
             \n\
             {}\n\
             --b--\n",
            data_encoding::BASE64.encode(small)
        )),
    ]
    .concat();
    let parsed = parse_mail(&raw);
    let listed = &parsed.content.attachments;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].filename.as_deref(), Some("big.bin"));
    assert_eq!(listed[0].size_bytes, ATTACHMENT_STORE_LIMIT + 1);
    assert!(!listed[0].stored);
    assert_eq!(parsed.attachments[0].bytes, None);
    assert!(listed[1].stored);
    assert_eq!(parsed.attachments[1].bytes.as_deref(), Some(&small[..]));

    let json: serde_json::Value = serde_json::from_slice(&parsed.content.to_json()).unwrap();
    assert_eq!(json["attachments"][0]["stored"], false);
    assert_eq!(
        json["attachments"][0]["sizeBytes"],
        ATTACHMENT_STORE_LIMIT + 1
    );
}

#[test]
fn attachment_exactly_at_the_limit_is_stored() {
    let exact = vec![b'x'; usize::try_from(ATTACHMENT_STORE_LIMIT).unwrap()];
    let raw = [
        crlf(
            "From: a@example.com\n\
             Content-Type: multipart/mixed; boundary=\"b\"\n\
             \n\
             --b\n\
             Content-Type: application/octet-stream\n\
             Content-Disposition: attachment; filename=\"exact.bin\"\n\
             Content-Transfer-Encoding: base64\n\
             \n",
        ),
        data_encoding::BASE64_MIME.encode(&exact).into_bytes(),
        crlf("--b--\n"),
    ]
    .concat();
    let parsed = parse_mail(&raw);
    assert_eq!(
        parsed.content.attachments[0].size_bytes,
        ATTACHMENT_STORE_LIMIT
    );
    assert!(parsed.content.attachments[0].stored);
    assert_eq!(
        parsed.attachments[0].bytes.as_ref().map(Vec::len),
        Some(exact.len())
    );
}

#[test]
fn non_utf8_charsets_in_headers_and_body() {
    // "Grüße aus Köln" in ISO-8859-1, an encoded word in KOI8-R ("Привет"),
    // and a Shift_JIS body ("こんにちは").
    let mut raw = crlf(
        "From: =?ISO-8859-1?Q?J=FCrgen_M=FCller?= <jm@example.de>\n\
         To: inbox@mail.localhost\n\
         Subject: =?ISO-8859-1?Q?Gr=FC=DFe_aus_K=F6ln?= =?KOI8-R?B?8NLJ18XU?=\n\
         Content-Type: text/plain; charset=Shift_JIS\n\
         Content-Transfer-Encoding: 8bit\n\
         \n",
    );
    raw.extend_from_slice(&[0x82, 0xb1, 0x82, 0xf1, 0x82, 0xc9, 0x82, 0xbf, 0x82, 0xcd]);
    raw.extend_from_slice(b"\r\n");
    let parsed = parse_mail(&raw);
    let c = &parsed.content;
    assert_eq!(
        c.subject.as_deref(),
        Some("Gr\u{fc}\u{df}e aus K\u{f6}lnПривет")
    );
    assert_eq!(
        c.from.as_deref(),
        Some("J\u{fc}rgen M\u{fc}ller <jm@example.de>")
    );
    assert_eq!(c.text.as_deref(), Some("こんにちは\r\n"));
}

#[test]
fn raw_latin1_subject_without_encoded_word_is_kept_lossily() {
    let mut raw = b"From: a@example.com\r\nSubject: caf".to_vec();
    raw.push(0xE9);
    raw.extend_from_slice(b"\r\n\r\nbody\r\n");
    let parsed = parse_mail(&raw);
    let subject = parsed.content.subject.unwrap();
    assert!(subject.starts_with("caf"), "{subject:?}");
    assert_eq!(parsed.content.text.as_deref(), Some("body\r\n"));
}

#[test]
fn missing_headers_are_null_and_lists_empty() {
    let parsed = parse_mail(b"X-Other: 1\r\n\r\nJust a body.\r\n");
    let c = &parsed.content;
    assert_eq!(c.from, None);
    assert!(c.to.is_empty());
    assert!(c.cc.is_empty());
    assert_eq!(c.reply_to, None);
    assert_eq!(c.subject, None);
    assert_eq!(c.date, None);
    assert_eq!(c.message_id_header, None);
    assert_eq!(c.text.as_deref(), Some("Just a body.\r\n"));
    assert_eq!(c.html, None);

    let json: serde_json::Value = serde_json::from_slice(&c.to_json()).unwrap();
    for key in [
        "from",
        "replyTo",
        "subject",
        "date",
        "messageIdHeader",
        "html",
    ] {
        assert!(json[key].is_null(), "{key} should be null");
    }
    assert_eq!(json["to"], serde_json::json!([]));
    assert_eq!(json["cc"], serde_json::json!([]));
    assert_eq!(json["attachments"], serde_json::json!([]));
}

#[test]
fn unparseable_date_is_null() {
    let parsed = parse_mail(b"Date: someday soon\r\nSubject: x\r\n\r\nhi\r\n");
    assert_eq!(parsed.content.date, None);
    assert_eq!(parsed.content.subject.as_deref(), Some("x"));
}

#[test]
fn group_addresses_are_flattened() {
    let parsed = parse_mail(
        b"From: a@example.com\r\nTo: Team: one@example.com, Two <two@example.com>;, three@example.com\r\n\r\nx\r\n",
    );
    let to = &parsed.content.to;
    assert!(to.contains(&"one@example.com".to_owned()), "{to:?}");
    assert!(to.contains(&"Two <two@example.com>".to_owned()), "{to:?}");
}

#[test]
fn malformed_input_still_yields_text() {
    // No header block at all.
    let parsed = parse_mail(b"this is not an email at all\r\njust lines\r\n");
    let text = parsed.content.text.unwrap();
    assert!(text.contains("just lines"), "{text:?}");

    // Invalid UTF-8 with no structure.
    let parsed = parse_mail(&[0xff, 0xfe, b'h', b'i']);
    assert!(parsed.content.text.unwrap().contains("hi"));

    // Empty input.
    let parsed = parse_mail(b"");
    assert_eq!(parsed.content, MessageContent::default());

    // Broken multipart: boundary never appears.
    let parsed = parse_mail(
        b"Subject: broken\r\nContent-Type: multipart/mixed; boundary=\"nope\"\r\n\r\nplain words\r\n",
    );
    assert_eq!(parsed.content.subject.as_deref(), Some("broken"));
    let text = parsed.content.text.unwrap_or_default();
    assert!(text.contains("plain words"), "{text:?}");

    // Bad base64 in an attachment does not lose the rest.
    let parsed = parse_mail(
        b"Subject: b\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nhello\r\n--x\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64!!!\r\n--x--\r\n",
    );
    assert_eq!(parsed.content.text.as_deref(), Some("hello"));
}

#[test]
fn json_has_exactly_the_contract_field_names() {
    let content = MessageContent {
        from: Some("a@example.com".into()),
        to: vec!["b@example.com".into()],
        cc: vec![],
        reply_to: None,
        subject: Some("s".into()),
        date: Some("2025-01-01T00:00:00.000Z".into()),
        message_id_header: None,
        text: Some("t".into()),
        html: None,
        attachments: vec![AttachmentInfo {
            index: 0,
            filename: None,
            content_type: "application/pdf".into(),
            size_bytes: 10,
            stored: true,
        }],
    };
    let json: serde_json::Value = serde_json::from_slice(&content.to_json()).unwrap();
    let object = json.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = vec![
        "from",
        "to",
        "cc",
        "replyTo",
        "subject",
        "date",
        "messageIdHeader",
        "text",
        "html",
        "attachments",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);

    let attachment = json["attachments"][0].as_object().unwrap();
    let mut keys: Vec<&str> = attachment.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["contentType", "filename", "index", "sizeBytes", "stored"]
    );
    assert!(json["replyTo"].is_null());
    assert!(json["attachments"][0]["filename"].is_null());
    assert_eq!(json["attachments"][0]["index"], 0);
    assert_eq!(json["attachments"][0]["contentType"], "application/pdf");
    assert_eq!(json["attachments"][0]["sizeBytes"], 10);
    assert_eq!(json["attachments"][0]["stored"], true);
}

#[test]
fn parsed_json_round_trip_of_a_real_message() {
    let raw = crlf(
        "From: a@example.com\n\
         To: b@mail.localhost\n\
         Subject: Round trip\n\
         Content-Type: multipart/mixed; boundary=q\n\
         \n\
         --q\n\
         Content-Type: text/plain\n\
         \n\
         hello\n\
         --q\n\
         Content-Type: message/rfc822\n\
         \n\
         From: inner@example.com\n\
         Subject: inner\n\
         \n\
         inner body\n\
         --q--\n",
    );
    let parsed = parse_mail(&raw);
    let json: serde_json::Value = serde_json::from_slice(&parsed.content.to_json()).unwrap();
    assert_eq!(json["subject"], "Round trip");
    assert_eq!(json["text"], "hello");
    assert_eq!(json["attachments"][0]["contentType"], "message/rfc822");
    let inner = parsed.attachments[0].bytes.as_deref().unwrap();
    assert!(String::from_utf8_lossy(inner).contains("inner body"));
}

/// A message whose body nests `levels` multiparts, one text part innermost.
fn nested_multiparts(levels: usize) -> Vec<u8> {
    let mut text = String::from("From: a@example.com\r\nSubject: deep\r\nMIME-Version: 1.0\r\n");
    for level in 0..levels {
        text.push_str(&format!(
            "Content-Type: multipart/mixed; boundary=\"b{level}\"\r\n\r\n--b{level}\r\n"
        ));
    }
    text.push_str("Content-Type: text/plain\r\n\r\ninnermost\r\n");
    for level in (0..levels).rev() {
        text.push_str(&format!("--b{level}--\r\n"));
    }
    text.into_bytes()
}

#[test]
fn structure_within_the_limits_is_parsed_as_usual() {
    let raw = nested_multiparts(MAX_MIME_DEPTH - 1);
    let parsed = parse_mail_checked(&raw).unwrap();
    assert_eq!(
        parsed.content.text.as_deref().map(str::trim),
        Some("innermost")
    );
    assert_eq!(parsed_without_limits(&raw), parsed);
}

fn parsed_without_limits(raw: &[u8]) -> ParsedMail {
    parse_mail(raw)
}

#[test]
fn nesting_deeper_than_the_limit_is_refused() {
    let raw = nested_multiparts(MAX_MIME_DEPTH + 1);
    assert_eq!(parse_mail_checked(&raw), Err(MimeLimit::Depth));
    // Without the limits it is read as usual.
    assert!(parse_mail(&raw).content.subject.is_some());
}

#[test]
fn too_many_parts_are_refused() {
    // Parts without a Content-Type line: the pre-scan does not see them,
    // the walk over the parsed tree does.
    let mut text = String::from(
        "From: a@example.com\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=p\r\n\r\n",
    );
    for i in 0..MAX_MIME_PARTS {
        text.push_str(&format!("--p\r\n\r\npart {i}\r\n"));
    }
    text.push_str("--p--\r\n");
    assert_eq!(
        parse_mail_checked(text.as_bytes()).unwrap_err().to_string(),
        "message has more than 500 MIME parts"
    );
}

#[test]
fn a_flood_of_empty_parts_is_refused_before_the_parser_builds_them() {
    // One Content-Type line and 20,000 empty parts (the measured attack had
    // millions in 30 MB): the pre-scan counts delimiter lines, so the
    // parser never builds the parts to be counted afterwards.
    let mut text = String::from(
        "From: a@example.com\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=p\r\n\r\n",
    );
    text.push_str(&"--p\r\n\r\n".repeat(20_000));
    text.push_str("--p--\r\n");
    assert_eq!(
        refused_before_parsing(text.as_bytes()),
        Some(MimeLimit::Parts)
    );
    assert_eq!(parse_mail_checked(text.as_bytes()), Err(MimeLimit::Parts));
    // Mail with a signature and a few dashed lines is read as usual.
    let letter = "From: a@example.com\r\n\r\n--- notes ---\r\nhello\r\n-- \r\nA.\r\n";
    assert_eq!(refused_before_parsing(letter.as_bytes()), None);
    assert!(parse_mail_checked(letter.as_bytes()).is_ok());
}

#[test]
fn a_header_with_too_many_fields_is_refused() {
    let mut text = String::from("From: a@example.com\r\n");
    for i in 0..MAX_HEADER_FIELDS {
        text.push_str(&format!("X-Filler-{i}: x\r\n"));
    }
    text.push_str("\r\nbody\r\n");
    assert_eq!(
        parse_mail_checked(text.as_bytes()),
        Err(MimeLimit::HeaderFields)
    );
    let within = text.replacen("X-Filler-0: x\r\n", "", 1);
    assert!(parse_mail_checked(within.as_bytes()).is_ok());
}

#[test]
fn a_flood_of_nested_messages_is_refused_before_parsing_on_a_small_stack() {
    // 200,000 message/rfc822 levels in 6 MB: refused by the pre-scan, so the
    // parser never builds (nor drops) a tree that deep.
    let raw = "Content-Type: message/rfc822\r\n\r\n".repeat(200_000);
    let refused = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || parse_mail_checked(raw.as_bytes()).err())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(refused, Some(MimeLimit::Parts));
}

#[test]
fn a_message_that_trips_the_parser_is_kept_as_text() {
    // Found by `cargo xtask fuzz mime_content`: a part header broken by a
    // mangled boundary trips an assertion inside mail-parser (a panic in
    // builds with debug assertions, such as this test's).
    let raw = include_bytes!("regressions/part_id_assertion.eml");
    let checked = parse_mail_checked(raw).expect("within the structure limits");
    let text = checked
        .content
        .text
        .clone()
        .expect("the message is kept as text");
    assert!(text.starts_with("From: a@example.com"), "{text}");
    assert_eq!(parse_mail(raw), checked);
}
