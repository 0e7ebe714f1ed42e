//! Quota rules: which limit applies to whom, and the sentences that say
//! why a job waits or is refused (docs/teams.md "Quotas").
//!
//! The config's `[quotas]` and the console's quotas (the store's) make one
//! set of rules: a console quota replaces the config's for the same role or
//! user. A user's limit for each resource is their own quota's when it sets
//! one, else their role's, else none. The scheduler applies the rules at
//! admission and when a job enters the queue; the handlers list them.

use std::collections::BTreeMap;

use jobdeck_api::{format_bytes, Quota, QuotaLimits, QuotaScope, QuotaSource, Role};
use jobdeck_store::QuotaRow;

use crate::config::QuotasConfig;

/// Every quota in force.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaRules {
    roles: BTreeMap<Role, Quota>,
    users: BTreeMap<String, Quota>,
}

/// One limit in force for a user and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub value: i64,
    /// "quota of role member", "quota of user alice".
    pub origin: String,
}

/// The limits in force for one user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserLimits {
    own: Option<QuotaLimits>,
    role: Option<(Role, QuotaLimits)>,
    user: String,
}

/// What a job holds once admitted: every replica slot's GPUs, and the slots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub gpus: i64,
    pub replicas: i64,
}

/// What a user holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    pub gpus: i64,
    pub replicas: i64,
    pub log_bytes: i64,
}

fn quota(scope: QuotaScope, name: String, limits: QuotaLimits, source: QuotaSource) -> Quota {
    Quota { scope, name, limits, source, updated_by: None, updated_at: None }
}

impl QuotaRules {
    /// The rules of the config with the console's quotas over it.
    pub fn new(config: &QuotasConfig, stored: Vec<QuotaRow>) -> Self {
        let mut rules = QuotaRules {
            roles: config
                .roles
                .iter()
                .map(|(role, limits)| {
                    (*role, quota(QuotaScope::Role, role.as_str().into(), *limits, QuotaSource::Config))
                })
                .collect(),
            users: config
                .users
                .iter()
                .map(|(name, limits)| {
                    (name.clone(), quota(QuotaScope::User, name.clone(), *limits, QuotaSource::Config))
                })
                .collect(),
        };
        for row in stored {
            let mut q = quota(row.scope, row.name.clone(), row.limits, QuotaSource::Console);
            q.updated_by = Some(row.updated_by);
            q.updated_at = Some(row.updated_at);
            match row.scope {
                QuotaScope::Role => {
                    if let Some(role) = Role::parse(&row.name) {
                        rules.roles.insert(role, q);
                    }
                }
                QuotaScope::User => {
                    rules.users.insert(row.name, q);
                }
            }
        }
        rules
    }

    /// Whether no quota limits anything: the scheduler then skips counting.
    pub fn is_empty(&self) -> bool {
        self.roles.values().chain(self.users.values()).all(|q| q.limits.is_empty())
    }

    /// Whether any quota limits log bytes: only then are they summed at
    /// each admission pass.
    pub fn limits_log_bytes(&self) -> bool {
        self.roles.values().chain(self.users.values()).any(|q| q.limits.log_bytes.is_some())
    }

    /// Every quota, roles first (viewer, member, admin), then users by name.
    pub fn list(&self) -> Vec<Quota> {
        self.roles.values().chain(self.users.values()).cloned().collect()
    }

    /// The limits in force for `user`, whose role is `role`.
    pub fn limits_for(&self, user: &str, role: Role) -> UserLimits {
        UserLimits {
            own: self.users.get(user).map(|q| q.limits),
            role: self.roles.get(&role).map(|q| (role, q.limits)),
            user: user.to_string(),
        }
    }
}

impl UserLimits {
    /// Each limit in force: the user's own, else the role's.
    pub fn effective(&self) -> QuotaLimits {
        let own = self.own.unwrap_or_default();
        own.or(self.role.map(|(_, l)| l).unwrap_or_default())
    }

    fn limit(&self, pick: fn(&QuotaLimits) -> Option<i64>) -> Option<Limit> {
        if let Some(value) = self.own.as_ref().and_then(pick) {
            return Some(Limit { value, origin: format!("quota of user {}", self.user) });
        }
        let (role, limits) = self.role.as_ref()?;
        pick(limits).map(|value| Limit { value, origin: format!("quota of role {}", role.as_str()) })
    }

    /// Why a job that needs `needs` can never run under these limits, with
    /// the field to name (a 422 at creation); `shape` names the job's shape.
    pub fn never_fits(&self, needs: Needs, shape: &str) -> Option<(&'static str, String)> {
        if let Some(limit) = self.limit(|l| l.running_gpus).filter(|l| needs.gpus > l.value) {
            return Some((
                "spec.resource_shape",
                format!(
                    "needs {} GPUs at once ({} replicas of shape '{shape}'), but {} may hold at most {} ({})",
                    needs.gpus, needs.replicas, self.user, limit.value, limit.origin
                ),
            ));
        }
        if let Some(limit) = self.limit(|l| l.running_replicas).filter(|l| needs.replicas > l.value) {
            return Some((
                "spec.parallelism",
                format!(
                    "runs {} replicas at once, but {} may hold at most {} ({})",
                    needs.replicas, self.user, limit.value, limit.origin
                ),
            ));
        }
        None
    }

    /// Why one more job of the user may not enter the queue while
    /// `queued` of theirs wait there.
    pub fn queue_full(&self, queued: i64) -> Option<String> {
        let limit = self.limit(|l| l.queued_jobs).filter(|l| queued >= l.value)?;
        Some(format!(
            "{} has {queued} of {} jobs allowed in the queue ({}); wait for one to start, or stop one",
            self.user, limit.value, limit.origin
        ))
    }

    /// Why a queued job that needs `needs` waits while the user holds
    /// `held`: the sentence of its status.
    pub fn over(&self, held: Held, needs: Needs) -> Option<String> {
        let user = &self.user;
        if let Some(limit) =
            self.limit(|l| l.running_gpus).filter(|l| needs.gpus > 0 && held.gpus + needs.gpus > l.value)
        {
            return Some(format!(
                "over quota: {user} uses {} of {} GPUs ({}); this job needs {}",
                held.gpus, limit.value, limit.origin, needs.gpus
            ));
        }
        if let Some(limit) = self.limit(|l| l.running_replicas).filter(|l| held.replicas + needs.replicas > l.value) {
            return Some(format!(
                "over quota: {user} runs {} of {} replicas ({}); this job needs {}",
                held.replicas, limit.value, limit.origin, needs.replicas
            ));
        }
        if let Some(limit) = self.limit(|l| l.log_bytes).filter(|l| held.log_bytes >= l.value) {
            return Some(format!(
                "over quota: {user} keeps {} of logs, {} allowed ({}); delete finished jobs to free some",
                format_bytes(held.log_bytes),
                format_bytes(limit.value),
                limit.origin
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> QuotaRules {
        let config = QuotasConfig {
            roles: [(Role::Member, QuotaLimits { running_gpus: Some(8), queued_jobs: Some(2), ..Default::default() })]
                .into(),
            users: [("carol".to_string(), QuotaLimits { running_gpus: Some(1), ..Default::default() })].into(),
        };
        let stored = vec![QuotaRow {
            scope: QuotaScope::User,
            name: "alice".into(),
            limits: QuotaLimits { running_gpus: Some(16), ..Default::default() },
            updated_by: "admin".into(),
            updated_at: 1,
        }];
        QuotaRules::new(&config, stored)
    }

    #[test]
    fn a_users_own_quota_goes_before_their_roles() {
        let rules = rules();
        assert_eq!(rules.limits_for("alice", Role::Member).effective().running_gpus, Some(16));
        assert_eq!(rules.limits_for("alice", Role::Member).effective().queued_jobs, Some(2));
        assert_eq!(rules.limits_for("bob", Role::Member).effective().running_gpus, Some(8));
        assert_eq!(rules.limits_for("dave", Role::Admin).effective(), QuotaLimits::default());
    }

    #[test]
    fn a_console_quota_replaces_the_configs_for_the_same_user() {
        let stored = vec![QuotaRow {
            scope: QuotaScope::User,
            name: "carol".into(),
            limits: QuotaLimits { queued_jobs: Some(5), ..Default::default() },
            updated_by: "admin".into(),
            updated_at: 1,
        }];
        let rules = QuotaRules::new(&rules_config(), stored);
        let carol = rules.limits_for("carol", Role::Member).effective();
        assert_eq!((carol.running_gpus, carol.queued_jobs), (Some(8), Some(5)));
    }

    fn rules_config() -> QuotasConfig {
        let mut config = QuotasConfig::default();
        config.roles.insert(Role::Member, QuotaLimits { running_gpus: Some(8), ..Default::default() });
        config.users.insert("carol".into(), QuotaLimits { running_gpus: Some(1), ..Default::default() });
        config
    }

    #[test]
    fn the_sentences_say_whose_quota_and_how_much() {
        let rules = rules();
        let bob = rules.limits_for("bob", Role::Member);
        let held = Held { gpus: 8, replicas: 2, log_bytes: 0 };
        assert_eq!(
            bob.over(held, Needs { gpus: 2, replicas: 1 }).as_deref(),
            Some("over quota: bob uses 8 of 8 GPUs (quota of role member); this job needs 2")
        );
        assert_eq!(bob.over(Held { gpus: 6, ..held }, Needs { gpus: 2, replicas: 1 }), None);
        let (field, why) = bob.never_fits(Needs { gpus: 16, replicas: 2 }, "gpu.8x").unwrap();
        assert_eq!(field, "spec.resource_shape");
        assert!(why.contains("bob may hold at most 8 (quota of role member)"), "{why}");
        assert!(bob.queue_full(1).is_none());
        assert!(bob.queue_full(2).unwrap().starts_with("bob has 2 of 2 jobs allowed in the queue"));
        assert!(rules.limits_for("alice", Role::Member).never_fits(Needs { gpus: 16, replicas: 2 }, "x").is_none());
    }
}
