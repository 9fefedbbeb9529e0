//! The staff API under `/staff`: staff tokens only (sessions, device
//! credentials, revoked and expired tokens get 401), each endpoint needing
//! one role of the token (403 `role_required`). Staff read and write the
//! `forStaff` copies; the support team's private key never reaches the
//! service. Every action and every list read is written to the audit log.

use actix_web::web::{Data, Path, Query};
use actix_web::{FromRequest, HttpRequest, HttpResponse, dev::Payload};
use sealpost_kernel::{AccountId, PageLimits, PageRequest, TicketId};
use sealpost_seal::b64;
use sealpost_support::{
    AbuseReport, AbuseStatus, AbuseTarget, AuditEntry, Role, StaffMember, Switches, Ticket,
    TicketStatus,
};
use sealpost_wire as wire;
use serde::Deserialize;
use utoipa::IntoParams;

use super::support::{key, message_body, new_message, ticket_body};
use crate::auth::{Extracting, with_bearer};
use crate::error::{ApiError, path_id};
use crate::json::Json;
use crate::state::AppState;

/// A live staff token's holder.
pub struct StaffCaller(pub StaffMember);

impl StaffCaller {
    /// The holder, when the token has `role` (403 `role_required` otherwise).
    fn with(&self, role: Role) -> Result<&StaffMember, ApiError> {
        self.0.require(role)?;
        Ok(&self.0)
    }
}

impl FromRequest for StaffCaller {
    type Error = ApiError;
    type Future = Extracting<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        with_bearer(req, async |state, token| {
            Ok(StaffCaller(state.staff.authenticate(&token).await?))
        })
    }
}

fn staff_ticket(ticket: Ticket) -> wire::StaffTicket {
    wire::StaffTicket {
        account_id: ticket.account.clone(),
        account_key: ticket.account_key.to_text(),
        staff_key: ticket.staff_key.to_text(),
        binding: ticket.binding.map(|mac| b64::encode(&mac)),
        ticket: ticket_body(ticket, true),
    }
}

async fn switches_body(
    state: &AppState,
    switches: Switches,
) -> Result<wire::SwitchesBody, ApiError> {
    let availability = state.support.availability().await?;
    Ok(wire::SwitchesBody {
        staff_key: availability.staff_key.map(|key| key.to_text()),
        support_off: switches.support_off,
        webhooks_paused: switches.webhooks_paused,
    })
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusQuery {
    /// open or resolved; all when left out.
    #[param(inline, value_type = Option<wire::schemas::ReviewStatus>)]
    status: Option<String>,
    /// Page size: 1 to 500, default 500.
    #[param(value_type = u32, required = false, minimum = 1, maximum = 500)]
    limit: Option<String>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

impl StatusQuery {
    fn page(&self) -> Result<PageRequest, ApiError> {
        Ok(PageRequest::parse(
            self.limit.as_deref(),
            self.cursor.as_deref(),
            PageLimits::STAFF_LISTS,
        )?)
    }

    /// The `status` filter of the ticket and report lists.
    fn parse<T: std::str::FromStr>(&self) -> Result<Option<T>, ApiError> {
        self.status
            .as_deref()
            .map(|text| {
                text.parse::<T>()
                    .map_err(|_| ApiError::invalid_field("status", "open or resolved"))
            })
            .transpose()
    }
}

/// Tickets of every account, most recently active first, a page at a time
/// (up to 500); the read is audited (`ticket.list`).
#[utoipa::path(get, path = "/staff/tickets", operation_id = "list_staff_tickets", tag = "staff", security(("staff" = [])), params(StatusQuery),
    responses((status = 200, body = wire::StaffTicketList), (status = 400, body = wire::ErrorBody, description = "invalid_field: status, limit, cursor"),
        (status = 401, body = wire::ErrorBody, description = "not a live staff token"), (status = 403, body = wire::ErrorBody, description = "role_required: read")))]
pub async fn tickets(
    state: Data<AppState>,
    caller: StaffCaller,
    query: Query<StatusQuery>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Read)?;
    let status = query.parse::<TicketStatus>()?;
    let page = query.page()?;
    let read = state
        .staff
        .list_read(by, "ticket.list", status.map(|s| s.as_str()), &page);
    let tickets = state.support.staff_list(status, &page, &read).await?;
    Ok(HttpResponse::Ok().json(wire::StaffTicketList {
        next_cursor: tickets.next_cursor,
        tickets: tickets.items.into_iter().map(staff_ticket).collect(),
    }))
}

/// One ticket with its `forStaff` copies and the account's last key binding.
#[utoipa::path(get, path = "/staff/tickets/{id}", operation_id = "get_staff_ticket", tag = "staff", security(("staff" = [])), params(("id" = String, Path)),
    responses((status = 200, body = wire::StaffTicketDetail), (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: read"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn get_ticket(
    state: Data<AppState>,
    caller: StaffCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    caller.with(Role::Read)?;
    let id = path_id::<TicketId>(&id)?;
    let (ticket, messages, binding) = state.support.staff_read(&id).await?;
    // A read changes nothing to roll back: its row is written before any of
    // the ticket is sent, so nothing is shown unrecorded.
    state
        .staff
        .audit(&caller.0.id, "ticket.read", Some(id.as_str()), None)
        .await?;
    Ok(HttpResponse::Ok().json(wire::StaffTicketDetail {
        ticket: staff_ticket(ticket),
        messages: messages
            .into_iter()
            .map(|message| message_body(message, true))
            .collect(),
        key_binding: binding.map(|binding| wire::StaffBinding {
            account_key: binding.account_key.to_text(),
            staff_key: binding.staff_key.to_text(),
            binding: b64::encode(&binding.mac),
            at: binding.at,
        }),
    }))
}

/// A staff reply, both copies sealed by the staff client. The account sees
/// the ticket unread with `lastAuthor: staff` and gets a support push.
#[utoipa::path(post, path = "/staff/tickets/{id}/messages", operation_id = "reply_to_ticket", tag = "staff", security(("staff" = [])),
    params(("id" = String, Path)), request_body = wire::TicketMessageRequest,
    responses((status = 201, body = wire::MessageAdded), (status = 400, body = wire::ErrorBody, description = "invalid_id, invalid_key, invalid_box"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: reply"), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "staff_key_changed, ticket_closed, ticket_full, support_storage_full, id_taken"),
        (status = 413, body = wire::ErrorBody, description = "too_large")))]
pub async fn reply(
    state: Data<AppState>,
    caller: StaffCaller,
    id: Path<String>,
    Json(body): Json<wire::TicketMessageRequest>,
) -> Result<HttpResponse, ApiError> {
    caller.with(Role::Reply)?;
    let id = path_id::<TicketId>(&id)?;
    let message = new_message(&body)?;
    let (_, at) = state
        .support
        .staff_reply(&caller.0.id, &id, &message)
        .await?;
    Ok(HttpResponse::Created().json(wire::MessageAdded { ok: true, at }))
}

/// Resolves a ticket; the account gets a support push.
#[utoipa::path(post, path = "/staff/tickets/{id}/resolve", operation_id = "resolve_ticket", tag = "staff", security(("staff" = [])), params(("id" = String, Path)),
    responses((status = 200, body = wire::StaffTicketReply), (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: reply"),
        (status = 404, body = wire::ErrorBody)))]
pub async fn resolve(
    state: Data<AppState>,
    caller: StaffCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    caller.with(Role::Reply)?;
    let id = path_id::<TicketId>(&id)?;
    let ticket = state.support.staff_resolve(&caller.0.id, &id).await?;
    Ok(HttpResponse::Ok().json(wire::StaffTicketReply {
        ticket: staff_ticket(ticket),
    }))
}

/// A challenge to prove the current support key with: the rotation must
/// come within five minutes with the proof over it.
#[utoipa::path(post, path = "/staff/support-key/challenge", operation_id = "support_key_challenge", tag = "staff", security(("staff" = [])),
    responses((status = 200, body = wire::RotationChallengeBody), (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: rotate")))]
pub async fn rotation_challenge(
    state: Data<AppState>,
    caller: StaffCaller,
) -> Result<HttpResponse, ApiError> {
    caller.with(Role::Rotate)?;
    let challenge = state.staff.rotation_challenge()?;
    let current = state.support.availability().await?.staff_key;
    Ok(HttpResponse::Ok().json(wire::RotationChallengeBody {
        nonce: challenge.nonce,
        challenge_key: b64::encode(&challenge.challenge_key),
        staff_key: current.map(|key| key.to_text()),
        expires_at: challenge.expires_at,
    }))
}

/// Rotates the support key, with the current key's proof: new tickets and
/// messages must be sealed to it (409 `staff_key_changed` otherwise); old
/// ones keep the key they were sealed to.
#[utoipa::path(post, path = "/staff/support-key", operation_id = "rotate_support_key", tag = "staff", security(("staff" = [])), request_body = wire::RotateKeyRequest,
    responses((status = 200, body = wire::SwitchesBody), (status = 400, body = wire::ErrorBody, description = "invalid_key; invalid_field: proof (missing, not by the current key, or its challenge older than five minutes)"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: rotate")))]
pub async fn rotate_key(
    state: Data<AppState>,
    caller: StaffCaller,
    Json(body): Json<wire::RotateKeyRequest>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Rotate)?;
    let new_key = key("staffKey", &body.staff_key)?;
    // An undecodable proof is no proof: refused like a wrong one.
    let proof = b64::decode(&body.proof).unwrap_or_default();
    let current = state.support.availability().await?.staff_key;
    let switches = state
        .staff
        .rotate_key(by, current, new_key, &body.nonce, &proof)
        .await?;
    Ok(HttpResponse::Ok().json(switches_body(&state, switches).await?))
}

/// The operator switches.
#[utoipa::path(get, path = "/staff/switches", tag = "staff", security(("staff" = [])),
    responses((status = 200, body = wire::SwitchesBody), (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: read")))]
pub async fn get_switches(
    state: Data<AppState>,
    caller: StaffCaller,
) -> Result<HttpResponse, ApiError> {
    caller.with(Role::Read)?;
    let switches = state.support.availability().await?.switches;
    Ok(HttpResponse::Ok().json(switches_body(&state, switches).await?))
}

/// Switches in-app support off or on, pauses or resumes adding webhooks.
#[utoipa::path(patch, path = "/staff/switches", tag = "staff", security(("staff" = [])), request_body = wire::SwitchesRequest,
    responses((status = 200, body = wire::SwitchesBody), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "role_required: moderate")))]
pub async fn update_switches(
    state: Data<AppState>,
    caller: StaffCaller,
    Json(body): Json<wire::SwitchesRequest>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Moderate)?;
    let switches = state
        .staff
        .switch(by, body.support_off, body.webhooks_paused)
        .await?;
    Ok(HttpResponse::Ok().json(switches_body(&state, switches).await?))
}

async fn suspension_body(
    state: &AppState,
    account: AccountId,
) -> Result<wire::SuspensionBody, ApiError> {
    let suspension = state.staff.suspension(&account).await?;
    Ok(wire::SuspensionBody {
        account_id: account,
        suspended: suspension.is_some(),
        reason: suspension.as_ref().map(|s| s.reason.clone()),
        since: suspension.map(|s| s.since),
    })
}

/// Suspends an account: every endpoint but `/support*` answers 403
/// `account_suspended`, its mail is refused, its webhooks wait; nothing is deleted.
#[utoipa::path(post, path = "/staff/accounts/{id}/suspend", operation_id = "suspend_account", tag = "staff", security(("staff" = [])),
    params(("id" = String, Path)), request_body = wire::SuspendRequest,
    responses((status = 200, body = wire::SuspensionBody), (status = 400, body = wire::ErrorBody, description = "invalid_field: reason"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody, description = "role_required: moderate"), (status = 404, body = wire::ErrorBody)))]
pub async fn suspend(
    state: Data<AppState>,
    caller: StaffCaller,
    id: Path<String>,
    Json(body): Json<wire::SuspendRequest>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Moderate)?;
    let account = path_id::<AccountId>(&id)?;
    state.staff.suspend(by, &account, &body.reason).await?;
    Ok(HttpResponse::Ok().json(suspension_body(&state, account).await?))
}

/// Lifts a suspension; held webhook deliveries go out again.
#[utoipa::path(post, path = "/staff/accounts/{id}/unsuspend", operation_id = "unsuspend_account", tag = "staff", security(("staff" = [])),
    params(("id" = String, Path)), request_body = wire::SuspendRequest,
    responses((status = 200, body = wire::SuspensionBody), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "role_required: moderate"), (status = 404, body = wire::ErrorBody)))]
pub async fn unsuspend(
    state: Data<AppState>,
    caller: StaffCaller,
    id: Path<String>,
    Json(body): Json<wire::SuspendRequest>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Moderate)?;
    let account = path_id::<AccountId>(&id)?;
    state.staff.unsuspend(by, &account, &body.reason).await?;
    Ok(HttpResponse::Ok().json(suspension_body(&state, account).await?))
}

fn report_body(report: AbuseReport) -> wire::AbuseReportBody {
    let (email_address, message_id) = match report.target {
        AbuseTarget::EmailAddress(address) => (Some(address), None),
        AbuseTarget::MessageId(message) => (None, Some(message)),
    };
    wire::AbuseReportBody {
        id: report.id,
        email_address,
        message_id,
        reason: report.reason.as_str().to_owned(),
        details: report.details,
        contact: report.contact,
        status: report.status.as_str().to_owned(),
        account_id: report.account,
        created_at: report.created_at,
        resolved_at: report.resolved_at,
        resolution: report.resolution,
    }
}

/// Abuse reports, newest first, a page at a time (up to 500), with the
/// account each target belonged to; the read is audited (`abuse.list`).
#[utoipa::path(get, path = "/staff/abuse-reports", operation_id = "list_abuse_reports", tag = "staff", security(("staff" = [])), params(StatusQuery),
    responses((status = 200, body = wire::AbuseReportList), (status = 400, body = wire::ErrorBody, description = "invalid_field: status, limit, cursor"), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "role_required: read")))]
pub async fn abuse_reports(
    state: Data<AppState>,
    caller: StaffCaller,
    query: Query<StatusQuery>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Read)?;
    let status = query.parse::<AbuseStatus>()?;
    let reports = state.staff.reports(by, status, &query.page()?).await?;
    Ok(HttpResponse::Ok().json(wire::AbuseReportList {
        next_cursor: reports.next_cursor,
        reports: reports.items.into_iter().map(report_body).collect(),
    }))
}

/// Resolves a report with a note.
#[utoipa::path(post, path = "/staff/abuse-reports/{id}/resolve", tag = "staff", security(("staff" = [])),
    params(("id" = String, Path)), request_body = wire::ResolveReportRequest,
    responses((status = 204), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "role_required: moderate"), (status = 404, body = wire::ErrorBody)))]
pub async fn resolve_report(
    state: Data<AppState>,
    caller: StaffCaller,
    id: Path<String>,
    Json(body): Json<wire::ResolveReportRequest>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Moderate)?;
    state
        .staff
        .resolve_report(by, &id, &body.resolution)
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Entries to show, newest first: 1 to 200, default 100.
    #[param(value_type = u32, required = false, minimum = 1, maximum = 200)]
    limit: Option<String>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

fn audit_body(entry: AuditEntry) -> wire::AuditEntryBody {
    wire::AuditEntryBody {
        actor: entry.actor,
        action: entry.action,
        target: entry.target,
        note: entry.note,
        at: entry.at,
    }
}

/// The audit log of staff actions, newest first, a page at a time; the
/// read is itself audited (`audit.read`).
#[utoipa::path(get, path = "/staff/audit", operation_id = "list_staff_audit", tag = "staff", security(("staff" = [])), params(AuditQuery),
    responses((status = 200, body = wire::AuditLog), (status = 400, body = wire::ErrorBody, description = "invalid_field: limit, cursor"), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "role_required: read")))]
pub async fn audit(
    state: Data<AppState>,
    caller: StaffCaller,
    query: Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    let by = caller.with(Role::Read)?;
    let page = PageRequest::parse(
        query.limit.as_deref(),
        query.cursor.as_deref(),
        PageLimits::STAFF_AUDIT,
    )?;
    // An audit cursor names a row number; any other was not handed out.
    if page
        .after
        .as_ref()
        .is_some_and(|after| after.id.parse::<i64>().is_err())
    {
        return Err(sealpost_kernel::page::PageError::Cursor.into());
    }
    let entries = state.staff.audit_log(by, &page).await?;
    Ok(HttpResponse::Ok().json(wire::AuditLog {
        next_cursor: entries.next_cursor,
        entries: entries.items.into_iter().map(audit_body).collect(),
    }))
}
