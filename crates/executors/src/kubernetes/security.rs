//! Who a job's container runs as on Kubernetes: `spec.container.user` as
//! the numeric `runAsUser` and `runAsGroup`, and `privileged` for a job the
//! configuration lets run privileged on its node groups.
//!
//! Kubernetes takes ids only (a name is the image's to resolve, which
//! Kubernetes does not do), so a name is refused when the job is created,
//! by the field. What root in a container may do to a node is the cluster's
//! policy (Pod Security admission, user namespaces), as docs/kubernetes.md
//! says.

use jobdeck_api::{parse_container_user, JobSpec, UserPart};
use k8s_openapi::api::core::v1::SecurityContext;

/// The container's security context, if the job asks for one; a user given
/// by name is reported through `fail`.
pub fn container_security_context(spec: &JobSpec, fail: &mut impl FnMut(&str, String)) -> Option<SecurityContext> {
    let mut context = SecurityContext::default();
    if let Some(text) = spec.container.user.as_deref() {
        // The contract's rule has read the value already; a stored job
        // that breaks it runs as the image's user rather than as a guess.
        if let Ok(user) = parse_container_user(text) {
            let group = user.group.map(UserPart::id);
            match (user.user.id(), group) {
                (Some(uid), None | Some(Some(_))) => {
                    context.run_as_user = Some(i64::from(uid));
                    context.run_as_group = group.flatten().map(i64::from);
                }
                _ => fail(
                    "spec.container.user",
                    "Kubernetes runs a container as a numeric user and group, such as 1000 or 1000:1000; it does \
                     not look names up in the image"
                        .into(),
                ),
            }
        }
    }
    if spec.privileged() {
        context.privileged = Some(true);
    }
    (context != SecurityContext::default()).then_some(context)
}
