//! The Jobdeck wire contract.
//!
//! Every type that crosses the HTTP boundary between the console, the server
//! and Lepton clients such as the `lep` CLI lives here, together with the
//! defaults and the validation rules of a job. The crate compiles to wasm32
//! and native and depends on serde/validator-level crates only, so the console
//! and the server run the very same rules.
//!
//! Field names and JSON shapes follow the DGX Cloud Lepton v2 job API (the
//! open-source `leptonai` Python SDK). Fields Lepton lacks are optional
//! extensions with descriptive names, so Lepton clients ignore them.

// The derive's code names `::jobdeck_api`, also inside this crate.
extern crate self as jobdeck_api;

pub mod audit;
pub mod container_user;
pub mod convert;
pub mod decode;
pub mod defaults;
pub mod duration;
pub mod end_reason;
pub mod error;
pub mod invitations;
pub mod job;
pub mod label_selector;
pub mod logs;
pub mod metrics;
pub mod notifications;
pub mod queue;
pub mod quotas;
pub mod requirements;
pub mod resources;
pub mod retention;
pub mod roles;
pub mod sign_in;
pub mod stream;
pub mod templates;
pub mod tokens;
pub mod users;
pub mod validate;
pub mod wire;
pub mod workspace;

pub use audit::{AuditEntry, AuditList, AuditOutcome, AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAX};
pub use container_user::{parse_container_user, ContainerUser, UserPart};
pub use convert::{ConversionNote, ConvertedJob};
pub use decode::{Decode, DecodeError, JsonValue};
pub use defaults::{
    shared_memory_default_mib, split_image_reference, ImageReference, Priority, Protocol, PRIORITY_CLASSES,
};
pub use duration::{duration_in_words, parse_duration, short_duration};
pub use end_reason::EndReason;
pub use error::{ApiError, FieldErrors};
pub use invitations::{
    CreatedInvitation, InvitationCreate, InvitationInfo, InvitationList, InvitationPreview, InvitationRedeem,
    InvitationState, RedeemedInvitation,
};
pub use job::*;
pub use label_selector::{parse_label_selector, LabelCondition};
pub use logs::{LogLine, LogRange, LogSearch, MergedLine, MergedLog, MergedMatch, MergedSearch};
pub use notifications::{
    CreatedWebhook, DeliveryState, EmailChange, NotificationCreate, NotificationInfo, NotifyOn, WebhookCreate,
    WebhookDelivery, WebhookInfo, WebhookKind, GPU_IDLE_MINUTES_DEFAULT, GPU_IDLE_MINUTES_MAX, LOG_PATTERN_MAX_LEN,
    MEMORY_PERCENT_DEFAULT, NOTIFICATIONS_PER_USER_MAX, WEBHOOKS_PER_USER_MAX, WEBHOOK_DELIVERIES_KEPT,
};
pub use queue::{
    AffinityChange, EstimateBasis, QueueEntry, QueueList, SpecChange, StartEstimate, StartSuggestion, SuggestionKind,
};
pub use quotas::{
    format_bytes, parse_bytes, JobLogUsage, LogUsage, Quota, QuotaLimits, QuotaList, QuotaScope, QuotaSource, UsageDay,
    UsageGrouping, UsageHistory, UsageNow, UserUsage, LOG_USAGE_DEFAULT_JOBS, LOG_USAGE_MAX_JOBS,
    USAGE_HISTORY_DEFAULT_DAYS, USAGE_HISTORY_MAX_DAYS,
};
pub use requirements::*;
pub use resources::*;
pub use retention::{LogRemovalPolicy, LogRetention, LogRetentionSetting, WorkspaceLogRetention};
pub use roles::{may_change_job, Role};
pub use sign_in::SignInProblem;
pub use stream::{StreamEnd, StreamEvents, StreamJobRef, StreamLog, StreamMessage, StreamReplicas};
pub use templates::{Template, TemplateSpec, TemplateStatus, TEMPLATES_PER_USER_MAX, TEMPLATE_BYTES_MAX};
pub use tokens::{CreatedToken, NewSession, SignInMethods, SingleSignOnMethod, TokenCreate, TokenInfo, TokenKind};
pub use users::{JobBrief, RemovedUser, RemovedUsersJobs, RoleChange, SecretUse, UserInfo, UserList, UserRemoval};
pub use validate::*;
pub use wire::{from_json, from_json_object, JsonError};
pub use workspace::*;

/// The base path of the REST API.
pub const API_BASE: &str = "/api/v2";
