//! The form in a real browser: mounted, typed into, left, submitted.

use jobdeck_api::{
    FieldErrors, JobRequirements, LeptonJob, NodeGroupChoice, NodeInfo, ResourceAmounts, ShapeChoice, ValidationContext,
};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{HtmlElement, HtmlInputElement, HtmlSelectElement};

use super::form::*;
use super::JobForm;
use crate::api::ApiFailure;

const GIB: i64 = 1024;

fn shape(id: &str, memory_mib: i64) -> ShapeChoice {
    ShapeChoice {
        id: Some(id.into()),
        memory_in_mb: Some(memory_mib),
        description: Some(format!("{memory_mib} MiB")),
        ..Default::default()
    }
}

fn context() -> ValidationContext {
    let capacity = ResourceAmounts { cpu: 64.0, memory_in_mb: 1024 * GIB, gpu: 8 };
    let nodes = vec![NodeInfo { name: "box".into(), capacity }];
    let group = NodeGroupChoice { id: Some("local".into()), nodes, ..Default::default() };
    ValidationContext {
        shapes: vec![shape("cpu.small", 4 * GIB), shape("gpu.big", 128 * GIB), shape("cpu.tiny", GIB)],
        node_groups: vec![group],
        secret_names: vec!["hf-token".into()],
        requirements: JobRequirements { command_required: true, ..Default::default() },
        image_pull_secret_names: None,
    }
}

/// The form, mounted in a fresh element, with the server's data loaded.
struct Mounted {
    form: JobForm,
    host: HtmlElement,
    navigated: RwSignal<Option<String>>,
}

async fn mount() -> Mounted {
    mount_with(Some(context())).await
}

/// The form, mounted, with `context` as the server's data if any.
async fn mount_with(context: Option<ValidationContext>) -> Mounted {
    let document = web_sys::window().unwrap().document().unwrap();
    let host: HtmlElement = document.create_element("div").unwrap().unchecked_into();
    document.body().unwrap().append_child(&host).unwrap();
    let form = JobForm::new();
    if let Some(context) = context {
        form.set_context(context, Some(true));
    }
    let navigated = RwSignal::new(None::<String>);
    let mounted = form.clone();
    leptos::mount::mount_to(host.clone(), move || {
        super::job_form(mounted, move |href: &str| navigated.set(Some(href.into())))
    })
    .forget();
    settle().await;
    Mounted { form, host, navigated }
}

/// Lets what the last change scheduled run: the form draws at once, its
/// requests and file reads are tasks, and moving the focus waits for the
/// next frame. So this waits for that frame, then for one turn of the event
/// loop after it (a zero-delay timeout comes after every queued task): an
/// order of events, not a length of time.
async fn settle() {
    let window = web_sys::window().unwrap();
    let frame = web_sys::js_sys::Promise::new(&mut |resolve, _| {
        let _ = window.request_animation_frame(&resolve);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(frame).await;
    let turn = web_sys::js_sys::Promise::new(&mut |resolve, _| {
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(turn).await;
}

impl Mounted {
    fn element(&self, id: &str) -> HtmlElement {
        self.host
            .query_selector(&format!("#{id}"))
            .unwrap()
            .unwrap_or_else(|| panic!("no element #{id}"))
            .unchecked_into()
    }

    fn value(&self, id: &str) -> String {
        let element = self.element(id);
        if let Some(select) = element.dyn_ref::<HtmlSelectElement>() {
            return select.value();
        }
        if let Some(area) = element.dyn_ref::<web_sys::HtmlTextAreaElement>() {
            return area.value();
        }
        element.unchecked_into::<HtmlInputElement>().value()
    }

    /// Types `text` into input `id` as a person would: the value changes
    /// and an input event fires.
    async fn type_into(&self, id: &str, text: &str) {
        let element = self.element(id);
        let event = if let Some(select) = element.dyn_ref::<HtmlSelectElement>() {
            select.set_value(text);
            "change"
        } else if let Some(area) = element.dyn_ref::<web_sys::HtmlTextAreaElement>() {
            area.set_value(text);
            "input"
        } else {
            element.unchecked_ref::<HtmlInputElement>().set_value(text);
            "input"
        };
        let init = web_sys::EventInit::new();
        init.set_bubbles(true);
        element.dispatch_event(&web_sys::Event::new_with_event_init_dict(event, &init).unwrap()).unwrap();
        settle().await;
    }

    /// Leaves input `id`.
    async fn leave(&self, id: &str) {
        self.element(id).dispatch_event(&web_sys::Event::new("blur").unwrap()).unwrap();
        settle().await;
    }

    async fn click(&self, selector: &str) {
        let element: HtmlElement = self.host.query_selector(selector).unwrap().unwrap().unchecked_into();
        element.click();
        settle().await;
    }

    /// The error shown for input `id`, checking it is tied to the input.
    fn error(&self, id: &str) -> String {
        let input = self.element(id);
        let described = input.get_attribute("aria-describedby").unwrap_or_default();
        let error_id =
            described.split(' ').find(|d| d.ends_with("-error")).expect("an error element described by").to_string();
        let text = self.element(&error_id).text_content().unwrap_or_default();
        // A row's error element speaks for all its cells; a field's for
        // the field alone.
        let invalid = input.get_attribute("aria-invalid").as_deref() == Some("true");
        if invalid || error_id == format!("{id}-error") {
            assert_eq!(invalid, !text.is_empty(), "aria-invalid of #{id} with error {text:?}");
        }
        if invalid {
            text
        } else {
            String::new()
        }
    }

    fn text(&self) -> String {
        self.host.text_content().unwrap_or_default()
    }

    fn focused(&self) -> String {
        web_sys::window().unwrap().document().unwrap().active_element().map(|e| e.id()).unwrap_or_default()
    }
}

/// For each rule: typing a bad value shows nothing until the field is left,
/// then the contract's message; a good value clears it at once.
#[wasm_bindgen_test]
async fn each_rule_shows_its_message_after_leaving_and_clears_when_valid() {
    let cases: &[(&str, &str, &str, &str)] = &[
        ("job-name", "Train", "must start with a lowercase letter", "train"),
        ("job-name", "train_1", "may contain only lowercase letters, digits and hyphens", "train-1"),
        (
            "job-name",
            "abcdefghijklmnopqrstuvwxyzabcdefghijk",
            "must be at most 36 characters (it has 37)",
            "abcdefghijklmnopqrst",
        ),
        ("image", "NVIDIA/pytorch", "lowercase", "nvcr.io/nvidia/pytorch"),
        ("workers", "0", "must be between 1 and 100000", "1"),
        ("completions", "0", "must be between 1 and 100000", "2"),
        ("completions", "two", "must be a whole number, not 'two'", "2"),
        ("backoff-limit", "-1", "must be between 0 and 2147483647", "0"),
        ("active-deadline", "0", "must be between 1 and 315360000", "60"),
        ("shared-memory", "-5", "must be between 0 and 1073741824", "1024"),
        ("shared-memory", "999999999", "must be at most the memory of shape 'cpu.small'", "4096"),
        ("max-replica-retry", "-1", "must be between 0 and 2147483647", "2"),
        ("max-job-retry", "-2", "must be between 0 and 2147483647", "0"),
        ("archive-time", "3 weeks", "must be a duration such as 2h, 90m, 1d, PT4H30M", "2d"),
        ("pull-secrets", "a, a", "is already listed", "a, b"),
    ];
    for (id, bad, message, good) in cases {
        let m = mount().await;
        m.type_into(id, bad).await;
        assert_eq!(m.error(id), "", "#{id} shows an error before it was left");
        m.leave(id).await;
        let shown = m.error(id);
        assert!(shown.contains(message), "#{id} = {bad:?}: expected {message:?}, shown {shown:?}");
        m.type_into(id, good).await;
        assert_eq!(m.error(id), "", "#{id} = {good:?} still shows an error");
    }
}

#[wasm_bindgen_test]
async fn list_rows_have_their_own_errors() {
    let m = mount().await;
    m.click("#envs-add").await;
    assert_eq!(m.focused(), "envs-0-0", "the new row's first cell has the focus");
    m.type_into("envs-0-0", "LEPTON_TOKEN").await;
    m.leave("envs-0-0").await;
    assert!(m.error("envs-0-0").contains("must not start with 'LEPTON_'"), "{}", m.error("envs-0-0"));
    m.type_into("envs-0-0", "JOB_COMPLETIONS").await;
    assert!(m.error("envs-0-0").contains("is reserved"), "{}", m.error("envs-0-0"));
    m.type_into("envs-0-0", "HF_TOKEN").await;
    assert_eq!(m.error("envs-0-0"), "");

    // A secret reference names a secret that exists.
    m.type_into("envs-0-1", "secret").await;
    assert_eq!(m.element("envs-0-2").get_attribute("list").as_deref(), Some("secret-names"));
    m.type_into("envs-0-2", "nope").await;
    m.leave("envs-0-2").await;
    assert!(m.error("envs-0-2").contains("no secret named 'nope'"), "{}", m.error("envs-0-2"));
    m.type_into("envs-0-2", "hf-token").await;
    assert_eq!(m.error("envs-0-2"), "");

    m.click("#ports-add").await;
    m.type_into("ports-0-0", "70000").await;
    m.leave("ports-0-0").await;
    assert!(m.error("ports-0-0").contains("between 1 and 65535"), "{}", m.error("ports-0-0"));
    m.click("#ports-add").await;
    m.type_into("ports-0-0", "8080").await;
    m.type_into("ports-1-0", "8080").await;
    m.leave("ports-1-0").await;
    assert!(m.error("ports-1-0").contains("8080/TCP is already listed"), "{}", m.error("ports-1-0"));
    m.type_into("ports-1-1", "UDP").await;
    assert_eq!(m.error("ports-1-0"), "", "8080/UDP is another port");

    m.click("#mounts-add").await;
    m.type_into("mounts-0-0", "node-local").await;
    m.type_into("mounts-0-2", "/etc").await;
    m.leave("mounts-0-2").await;
    assert!(m.error("mounts-0-2").contains("system path"), "{}", m.error("mounts-0-2"));

    m.click("#labels-add").await;
    m.click("#labels-add").await;
    m.type_into("labels-0-0", "team").await;
    m.type_into("labels-1-0", "team").await;
    m.leave("labels-1-0").await;
    assert!(m.error("labels-1-0").contains("already listed"), "{}", m.error("labels-1-0"));

    // Removing a row removes its problems with it.
    m.click(".list:has(#mounts-add) .remove").await;
    assert!(m.host.query_selector("#mounts-0-2").unwrap().is_none());
    assert_eq!(m.focused(), "mounts-add");
}

#[wasm_bindgen_test]
async fn cross_field_rules_show_on_the_right_field() {
    let m = mount().await;
    m.type_into("completions", "2").await;
    m.type_into("parallelism", "3").await;
    m.leave("parallelism").await;
    assert!(m.error("parallelism").contains("less than or equal to completions (2)"), "{}", m.error("parallelism"));
    assert_eq!(m.error("completions"), "");
    // Fixing the other field clears it.
    m.type_into("completions", "3").await;
    assert_eq!(m.error("parallelism"), "");

    m.type_into("registry-username", "robot").await;
    m.leave("registry-username").await;
    assert_eq!(m.error("registry-username"), "");
    m.leave("registry-password").await;
    assert!(
        m.error("registry-password").contains("is required when a registry username is set"),
        "{}",
        m.error("registry-password")
    );
    m.type_into("registry-password", "s3cret").await;
    assert_eq!(m.error("registry-password"), "");

    // The image names a tag, so the tag field must stay empty.
    m.type_into("image", "busybox:1.36").await;
    m.type_into("image-tag", "1.37").await;
    m.leave("image-tag").await;
    assert!(m.error("image-tag").contains("already names a tag ('1.36')"), "{}", m.error("image-tag"));

    // More than one worker: completions and parallelism follow and are off.
    m.type_into("workers", "4").await;
    assert_eq!(m.value("completions"), "4");
    assert!(m.element("parallelism").has_attribute("disabled"));
    assert_eq!(m.error("parallelism"), "");
}

#[wasm_bindgen_test]
async fn the_shared_memory_default_follows_the_shape_until_typed() {
    let m = mount().await;
    // The first shape is chosen, and its default shown.
    assert_eq!(m.value("resource-shape"), "cpu.small");
    assert_eq!(m.value("shared-memory"), "2048");
    assert!(m.text().contains("2048 MiB (2 GiB) for cpu.small"), "{}", m.text());
    m.type_into("resource-shape", "gpu.big").await;
    assert_eq!(m.value("shared-memory"), "32768");
    assert!(m.text().contains("32768 MiB (32 GiB) for gpu.big (128 GiB of memory)"), "{}", m.text());
    m.type_into("resource-shape", "cpu.tiny").await;
    assert_eq!(m.value("shared-memory"), "512", "below 4 GiB: half the memory");
    // Typed, it stays put when the shape changes.
    m.type_into("shared-memory", "1000").await;
    m.type_into("resource-shape", "gpu.big").await;
    assert_eq!(m.value("shared-memory"), "1000");
    assert_eq!(m.form.with_state(|s| s.to_job().0.spec.shared_memory_size), Some(1000));
    // Emptied, it stays empty (no refill while typing) and the job leaves
    // the size to the shape's default.
    m.type_into("shared-memory", "").await;
    m.type_into("resource-shape", "cpu.small").await;
    assert_eq!(m.value("shared-memory"), "");
    assert_eq!(m.form.with_state(|s| s.to_job().0.spec.shared_memory_size), None);
    assert_eq!(m.error("shared-memory"), "");
}

/// A duration typed in any spelling is read back in words under its field.
#[wasm_bindgen_test]
async fn a_typed_duration_is_read_back_in_words() {
    let m = mount().await;
    m.type_into("active-deadline", "PT4H30M").await;
    assert!(m.text().contains("Default: no deadline; PT4H30M is 4 hours 30 minutes."), "{}", m.text());
    m.type_into("grace-period", "90").await;
    assert!(m.text().contains("90 is 1 minute 30 seconds."), "{}", m.text());
    m.type_into("grace-period", "soon").await;
    assert!(!m.text().contains("soon is"), "{}", m.text());
}

#[wasm_bindgen_test]
async fn defaults_are_shown() {
    let m = mount().await;
    assert_eq!(m.value("priority"), "mid-4000");
    let priority = m.element("priority").text_content().unwrap();
    assert!(priority.contains("Medium (4)") && priority.contains("High (9)"), "{priority}");
    let text = m.text();
    for shown in [
        "Default: Medium (4).",
        "Default: 1.",
        "Default: 3.",
        "Default: 3d (3 days).",
        "Default: Public.",
        "Default: latest.",
        "Default: the workspace setting (on).",
        "Default: cpu.small, the workspace's first shape.",
        "Default: no deadline.",
    ] {
        assert!(text.contains(shown), "{shown:?} missing");
    }
    for label in [
        "Job name",
        "Node group",
        "Priority",
        "Resource shape",
        "Workers",
        "Completions",
        "Parallelism",
        "Backoff limit",
        "Active deadline",
        "Queue limit",
        "Termination grace period",
        "Container image",
        "Container tag",
        "Registry username",
        "Registry password",
        "Command",
        "Container ports",
        "Log collection",
        "Environment variables",
        "Storage",
        "Shared memory",
        "Max replica failure retry",
        "Max job failure retry",
        "Archive time",
        "Visibility",
        "Labels",
        "Annotations",
        "Nodes",
        "Can preempt lower priority workload",
        "Can be preempted by higher priority workload",
        "Disable retry when program error occurs",
    ] {
        assert!(text.contains(label), "label {label:?} missing");
    }
    // Node groups and their nodes come from the server.
    assert!(m.host.query_selector("#node-groups input[value='local']").unwrap().is_some());
    assert!(m.host.query_selector("#nodes input[value='box']").unwrap().is_some());
}

#[wasm_bindgen_test]
async fn submit_is_blocked_until_valid_and_focuses_the_first_problem() {
    let m = mount().await;
    m.type_into("backoff-limit", "-1").await;
    m.type_into("job-name", "Hello").await;
    m.click("button[type=submit]").await;
    assert!(m.text().contains("3 problems remain"), "{}", m.text());
    assert!(m.text().contains("3 problems to fix before the job can be created."), "{}", m.text());
    assert_eq!(m.focused(), "job-name");
    assert_eq!(m.error("job-name"), "Job name must start with a lowercase letter");
    assert_eq!(m.navigated.get_untracked(), None);
    // An empty name is no problem: the server names the job.
    m.type_into("job-name", "").await;
    assert!(m.text().contains("2 problems remain"), "{}", m.text());
    m.click("button[type=submit]").await;
    assert_eq!(m.focused(), "backoff-limit");
}

/// The contract's rules come with the form's first use, not with the page:
/// until then nothing is counted or shown; a focus in the form fetches them
/// and the form checks itself with them.
#[wasm_bindgen_test]
async fn the_rules_come_with_the_first_use() {
    let m = mount().await;
    assert!(!m.text().contains("required or invalid"), "{}", m.text());
    assert!(!m.form.has_rules());
    m.element("job-name").dispatch_event(&web_sys::Event::new("focus").unwrap()).unwrap();
    settle().await;
    assert!(m.form.has_rules());
    // This server asks for a command; a missing name is the server's to
    // make.
    assert!(m.text().contains("1 required or invalid field"), "{}", m.text());
    m.leave("job-name").await;
    assert_eq!(m.error("job-name"), "");
}

/// A submit that comes first waits for the rules, then is blocked by them.
#[wasm_bindgen_test]
async fn a_submit_before_the_rules_are_in_waits_for_them() {
    let m = mount().await;
    assert!(!m.form.has_rules());
    m.form.submit();
    settle().await;
    assert!(m.text().contains("1 problem to fix before the job can be created."), "{}", m.text());
    assert_eq!(m.focused(), "command");
    assert_eq!(m.navigated.get_untracked(), None);
}

/// Rules that could not be fetched leave the form working without them,
/// and its next use asks again.
#[wasm_bindgen_test]
async fn rules_that_could_not_be_fetched_are_asked_for_again() {
    let m = mount().await;
    // As a failed fetch leaves the form: the rules asked for, and not in.
    m.form.0.change(|c| c.rules_asked = true);
    m.form.take_rules(Err(super::PartFailed("not downloaded".into())));
    assert!(!m.form.has_rules());
    m.type_into("job-name", "Bad").await;
    assert!(m.form.has_rules(), "the next use fetched them");
    m.leave("job-name").await;
    assert_eq!(m.error("job-name"), "Job name must start with a lowercase letter");
}

/// The form's conversion to a job comes with the rules: a submit that finds
/// them missing (their download failed) has no job to send, says so, and
/// sends nothing.
#[wasm_bindgen_test]
async fn a_submit_without_the_rules_says_a_part_is_missing() {
    let m = mount().await;
    m.type_into("command", "echo hi").await;
    m.form.0.change(|c| c.rules = None);
    m.form.send();
    settle().await;
    assert!(m.text().contains("could not be downloaded; try again"), "{}", m.text());
    assert_eq!(m.form.0.read(|c| c.busy), Some(false));
    assert_eq!(m.navigated.get_untracked(), None);
}

/// What the server's executor needs (`GET /workspace`'s `job_requirements`)
/// is a rule like any other: this server runs plain processes, so the form
/// asks for a command and will not send a job without one.
#[wasm_bindgen_test]
async fn the_executors_requirements_are_rules_of_the_form() {
    let m = mount().await;
    m.type_into("job-name", "hello").await;
    m.click("button[type=submit]").await;
    assert!(m.text().contains("1 problem remains"), "{}", m.text());
    assert_eq!(m.focused(), "command");
    assert!(m.error("command").contains("a command is required on this server"), "{}", m.error("command"));
    assert_eq!(m.navigated.get_untracked(), None);
    m.type_into("command", "echo hi").await;
    assert!(!m.text().contains("problem remains"), "{}", m.text());
    assert_eq!(m.error("command"), "");
}

/// A server that runs plain processes ignores the image; the form says so
/// where the image is typed, and says nothing of the kind when the server
/// runs containers.
#[wasm_bindgen_test]
async fn the_image_field_says_when_the_server_ignores_images() {
    let help =
        |m: &Mounted| m.host.query_selector("#image-help").unwrap().expect("the image's help").text_content().unwrap();
    let m = mount().await;
    assert!(!help(&m).contains("not used on this server"), "{}", help(&m));
    let mut process = context();
    process.requirements.image_ignored = true;
    m.form.set_context(process, Some(true));
    settle().await;
    assert!(help(&m).contains("not used on this server: it runs the command as a process"), "{}", help(&m));
}

#[wasm_bindgen_test]
async fn choices_say_when_there_is_nothing_to_choose() {
    // Before the server's data came, and when the workspace has no groups.
    let m = mount_with(None).await;
    let text = |m: &Mounted, id: &str| m.element(id).text_content().unwrap_or_default();
    for id in ["node-groups", "nodes"] {
        assert!(text(&m, id).contains("None to choose from."), "{}", text(&m, id));
    }
    m.form.set_context(context(), Some(true));
    settle().await;
    assert!(text(&m, "node-groups").contains("local"), "{}", text(&m, "node-groups"));
    assert!(!text(&m, "node-groups").contains("None to choose from."));
    let mut empty = context();
    empty.node_groups.clear();
    m.form.set_context(empty, Some(true));
    settle().await;
    assert!(text(&m, "node-groups").contains("None to choose from."), "{}", text(&m, "node-groups"));
}

#[wasm_bindgen_test]
async fn a_lost_sign_in_keeps_the_form_in_the_address_it_returns_to() {
    let m = mount().await;
    let asked = std::rc::Rc::new(std::cell::Cell::new(false));
    let seen = asked.clone();
    m.form.when_signed_out(move || seen.set(true));
    m.type_into("job-name", "kept-draft").await;
    let window = web_sys::window().unwrap();
    let before = window.location().href().unwrap();
    // The answer comes in a task, outside the page's reactive owner.
    m.form.show_failure(ApiFailure::Unauthorized);
    settle().await;
    let after = window.location().href().unwrap();
    let history = window.history().unwrap();
    history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&before)).unwrap();
    assert!(asked.get(), "the user was sent through sign-in");
    assert!(after.contains("/jobs/new#draft=") && after.contains("kept-draft"), "{after}");
}

#[wasm_bindgen_test]
async fn a_server_422_lands_on_the_same_fields() {
    let m = mount().await;
    m.type_into("job-name", "hello").await;
    m.click("#envs-add").await;
    m.type_into("envs-0-0", "A").await;
    let mut fields = FieldErrors::new();
    fields.insert("spec.container.command".into(), vec!["a command is required on this server".into()]);
    fields.insert("spec.envs[0].value".into(), vec!["is too long".into()]);
    fields.insert("spec.storage_attachments".into(), vec!["Jobdeck has no object-storage data sources".into()]);
    m.form.show_failure(ApiFailure::Invalid { message: "the request has 3 invalid fields".into(), fields });
    settle().await;
    assert_eq!(m.error("command"), "Command: a command is required on this server");
    assert_eq!(m.error("envs-0-2"), "Value is too long");
    assert!(m.text().contains("spec.storage_attachments: Jobdeck has no object-storage data sources"), "{}", m.text());
    assert_eq!(m.focused(), "form-problems", "a problem without a field comes first");
    // Editing the field clears the server's message.
    m.type_into("command", "echo hi").await;
    assert_eq!(m.error("command"), "");
    assert_eq!(m.value("job-name"), "hello");
}

#[wasm_bindgen_test]
async fn any_other_failure_is_a_banner_and_the_form_keeps_what_was_typed() {
    let m = mount().await;
    m.type_into("job-name", "hello").await;
    m.type_into("command", "echo hi").await;
    m.form.show_failure(ApiFailure::Server { status: 500, message: "internal error".into() });
    settle().await;
    let banner = m.host.query_selector(".banner.error").unwrap().expect("a banner");
    assert_eq!(banner.text_content().unwrap(), "internal error (HTTP 500)");
    assert_eq!(m.value("job-name"), "hello");
    assert_eq!(m.element("command").unchecked_into::<web_sys::HtmlTextAreaElement>().value(), "echo hi");
}

/// A failure after a click far down the form (Create is at its bottom)
/// brings its banner into view.
#[wasm_bindgen_test]
async fn a_banner_is_brought_into_view() {
    let m = mount().await;
    let window = web_sys::window().unwrap();
    let submit = m.host.query_selector("button[type=submit]").unwrap().unwrap();
    submit.scroll_into_view_with_bool(true);
    let height = window.inner_height().unwrap().as_f64().unwrap();
    m.form.show_failure(ApiFailure::Network("a part of the console could not be downloaded".into()));
    settle().await;
    let banner = m.host.query_selector(".banner.error").unwrap().expect("a banner");
    let top = banner.get_bounding_client_rect().top();
    // Scrolled to the banner's top, which the browser may place a fraction
    // of a pixel above the window's edge (-0.4375 was seen): still in view.
    assert!((-1.0..height).contains(&top), "the banner is at {top}, the window {height} high");
}

#[wasm_bindgen_test]
async fn a_clone_fills_the_form_without_secrets() {
    let m = mount().await;
    let job: LeptonJob = serde_json::from_str(
        r#"{"metadata":{"id":"train-ab12c","name":"train","visibility":"private","labels":{"team":"vision"}},
            "spec":{"resource_shape":"gpu.big","container":{"image":"busybox","registry_username":"robot","registry_password":"hunter2",
                    "command":["/bin/sh","-c","echo hi"],"ports":[{"container_port":8080,"protocol":"UDP"}]},
                    "affinity":{"allowed_dedicated_node_groups":["local"]},
                    "envs":[{"name":"A","value":"1"},{"name":"HF_TOKEN","value_from":{"secret_name_ref":"hf-token"}}],
                    "completions":4,"parallelism":2,"shared_memory_size":4096},
            "status":{"state":"Completed"}}"#,
    )
    .unwrap();
    m.form.load(FormState::for_clone(&job));
    settle().await;
    assert!(!m.host.inner_html().contains("hunter2"), "the password is nowhere on the page");
    assert_eq!(m.value("job-name"), "train");
    assert_eq!(m.value("resource-shape"), "gpu.big");
    assert_eq!(m.value("visibility"), "private");
    assert_eq!(m.value("completions"), "4");
    assert_eq!(m.value("shared-memory"), "4096");
    assert_eq!(m.value("registry-username"), "robot");
    assert_eq!(m.value("registry-password"), "", "the password is never copied");
    assert_eq!(m.value("envs-1-0"), "HF_TOKEN");
    assert_eq!(m.value("envs-1-1"), "secret");
    assert_eq!(m.value("envs-1-2"), "hf-token");
    assert_eq!(m.value("ports-0-1"), "UDP");
    assert_eq!(m.value("labels-0-0"), "team");
    let group: HtmlInputElement =
        m.host.query_selector("#node-groups input[value='local']").unwrap().unwrap().unchecked_into();
    assert!(group.checked());
    // The password is needed again before the clone can be created.
    m.click("button[type=submit]").await;
    assert_eq!(m.focused(), "registry-password");
    let (again, _) = m.form.with_state(|s| s.to_job());
    assert_eq!(again.metadata.id, None);
    assert_eq!(again.spec.container.command, job.spec.container.command);
}

#[wasm_bindgen_test]
async fn an_import_is_validated_like_typing() {
    let m = mount().await;
    let err = m.form.import("{not json").await.unwrap_err();
    assert!(err.starts_with("This is not a job spec in JSON"), "{err}");
    // A whole job, with problems: they show at once.
    m.form
        .import(r#"{"metadata":{"name":"Bad_Name"},"spec":{"completions":1,"parallelism":5,"envs":[{"name":"LEPTON_X","value":"1"}]}}"#).await.unwrap();
    settle().await;
    assert!(m.error("job-name").contains("must start with a lowercase letter"));
    assert!(m.error("parallelism").contains("less than or equal to completions (1)"));
    assert!(m.error("envs-0-0").contains("LEPTON_"));
    // A bare spec, as `lep job create -f` takes it.
    m.form.import(r#"{"resource_shape":"gpu.big","container":{"image":"busybox"}}"#).await.unwrap();
    settle().await;
    assert_eq!(m.value("resource-shape"), "gpu.big");
    assert_eq!(m.value("image"), "busybox");
    // Unknown fields are named.
    let err = m.form.import(r#"{"metadata":{"name":"a"},"spec":{"complétions":2}}"#).await.unwrap_err();
    assert!(err.contains("complétions"), "{err}");
}

/// A job that gives requirements instead of a shape (an import, a clone):
/// the shape field offers the smallest shape that meets them and says which
/// and what else would; the job goes out without a shape, for the server to
/// choose with the same rule.
#[wasm_bindgen_test]
async fn requirements_choose_the_shape_and_the_form_says_which() {
    let m = mount().await;
    let needing = |memory: i64| {
        format!(
            r#"{{"metadata":{{"name":"needy"}},"spec":{{"resources":{{"memory_in_mb":{{"min":{memory}}}}},"container":{{"image":"busybox","command":["true"]}}}}}}"#
        )
    };
    m.form.import(&needing(2048)).await.unwrap();
    settle().await;
    assert_eq!(m.value("resource-shape"), "", "the smallest that meets them");
    assert!(
        m.text().contains("shape 'cpu.small': the smallest of 2 shapes that meet 2 GiB or more memory (also: gpu.big)"),
        "{}",
        m.text()
    );
    assert_eq!(m.value("shared-memory"), "2048", "the chosen shape's default");
    assert_eq!(m.form.with_state(|s| s.to_job().0.spec.resource_shape), None);
    assert_eq!(m.error("resource-shape"), "");
    // A shape chosen by hand must meet them too.
    m.type_into("resource-shape", "cpu.tiny").await;
    m.leave("resource-shape").await;
    let error = m.error("resource-shape");
    assert!(error.contains(": shape 'cpu.tiny' has 1 GiB memory, which spec.resources.memory_in_mb"), "{error}");
    // When nothing meets them, the shape field says so and names the nearest.
    m.form.import(&needing(200 * GIB)).await.unwrap();
    settle().await;
    let error = m.error("resource-shape");
    assert!(
        error.contains(": no shape of this workspace has 200 GiB or more memory; the nearest: 'gpu.big'"),
        "{error}"
    );
}

#[wasm_bindgen_test]
async fn a_draft_link_carries_the_form_but_no_password() {
    let m = mount().await;
    m.type_into("job-name", "draft").await;
    m.type_into("registry-username", "robot").await;
    m.type_into("registry-password", "hunter2").await;
    m.type_into("command", "echo 'a b' && exit 0").await;
    let link = m.form.draft_link().await.unwrap();
    assert!(link.starts_with("/jobs/new#draft="), "{link}");
    assert!(!link.contains("hunter2"));
    let fragment = link.split_once('#').unwrap().1.strip_prefix(crate::routes::DRAFT_FRAGMENT).unwrap();
    let other = JobForm::new();
    other.import(&crate::routes::decode_component(fragment)).await.unwrap();
    let job = other.with_state(|s| s.to_job().0);
    assert_eq!(job.metadata.name.as_deref(), Some("draft"));
    assert_eq!(job.spec.container.registry_password, None);
    assert_eq!(job.spec.container.command.unwrap()[2], "echo 'a b' && exit 0");
}

#[wasm_bindgen_test]
async fn copy_as_shows_the_lep_command_and_the_json() {
    let m = mount().await;
    m.type_into("job-name", "hello").await;
    m.type_into("registry-password", "hunter2").await;
    m.click(".tool-buttons button:nth-child(1)").await;
    let output = m.value("output-text");
    assert!(output.starts_with("lep job create \\\n  --name hello"), "{output}");
    assert!(output.contains("--resource-shape cpu.small"), "{output}");
    m.click(".tool-buttons button:nth-child(2)").await;
    let json = m.value("output-text");
    assert!(json.contains("\"name\": \"hello\""), "{json}");
    assert!(!json.contains("hunter2"));
}
