//! The create-job form end to end: a person types a job into the real
//! console, the real server refuses what it must (a 422 lands on the field),
//! takes the rest, and the job runs to `Completed` on the local executor.

use jobdeck_e2e::{screenshot_path, Browser, JobState, Server};
use std::path::Path;

use serde_json::{json, Value};

/// Types into the input with `id`, then leaves it with Tab, as a person does.
fn fill(browser: &Browser, id: &str, text: &str) {
    let input = browser.find(&format!("#{id}"));
    browser.clear(&input);
    browser.type_text(&input, text);
    browser.type_text(&input, "\u{E004}");
}

/// Picks `value` in the select with `id`, as a person does.
fn choose(browser: &Browser, id: &str, value: &str) {
    browser.execute(
        "const e = document.getElementById(arguments[0]); e.value = arguments[1]; \
         e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));",
        vec![Value::from(id), Value::from(value)],
    );
}

/// The current value of an input or select (its property, not the
/// attribute it started with).
fn value_of(browser: &Browser, id: &str) -> Option<String> {
    let value = browser
        .execute("const e = document.getElementById(arguments[0]); return e ? e.value : null;", vec![Value::from(id)]);
    value.as_str().map(String::from)
}

/// The error the input with `id` is described by (a field's own, or its
/// list row's), as a screen reader finds it.
fn error_of(browser: &Browser, id: &str) -> String {
    browser.find(&format!("#{id}"));
    let text = browser.execute(
        "const e = document.getElementById(arguments[0]); \
         const d = (e.getAttribute('aria-describedby') || '').split(' ').find(x => x.endsWith('-error')); \
         return d ? document.getElementById(d).innerText : '';",
        vec![Value::from(id)],
    );
    text.as_str().unwrap_or_default().to_string()
}

#[test]
fn a_job_typed_into_the_form_runs_to_completed() {
    let server = Server::start();
    let (status, _) = server.call(
        "POST",
        "/usersecrets",
        &server.admin_token,
        Some(&serde_json::json!([{"name": "HF_SECRET", "value": "s3cret"}])),
    );
    assert_eq!(status, 200);
    let bob = server.token_for("bob");
    let shared = serde_json::json!({"name": "TEAM_KEY", "value": "shared", "visibility": "public"});
    assert_eq!(server.call("POST", "/usersecrets", &bob, Some(&shared)).0, 200);
    let browser = Browser::start();
    browser.goto(&server.sign_in_link);
    browser.wait_for_text("Deployments");
    browser.click(&browser.find("a.button.primary[href='/jobs/new']"));
    browser.wait_for_text("Resource shape");
    // The shapes and the node groups came from the server.
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    assert!(browser.try_find("#node-groups input[value='local']").is_some());
    browser.wait_for_text("2048 MiB (2 GiB) for cpu.small");
    // The secrets a variable may reference say who may see them: the user's
    // own private one, and another user's public one as theirs.
    let labels = browser.execute(
        "return [...document.querySelectorAll('#secret-names option')].map(o => o.value + ': ' + o.label);",
        vec![],
    );
    assert_eq!(labels, serde_json::json!(["HF_SECRET: private", "TEAM_KEY: public, bob's"]));

    // A wrong name shows its rule once the field is left, and clears when
    // fixed. The contract's rules are fetched at the form's first use (a
    // split point of their own), so the first message is waited for; once
    // in, every check is immediate.
    assert_eq!(
        browser.text(&browser.find("form.job-form .status")),
        "",
        "no problem is counted before the rules are in"
    );
    fill(&browser, "job-name", "Hello");
    browser.wait_until("the rules' first message", || {
        (error_of(&browser, "job-name") == "Job name must start with a lowercase letter").then_some(())
    });
    fill(&browser, "job-name", "hello-form");
    assert_eq!(error_of(&browser, "job-name"), "");

    browser.click(&browser.find("#envs-add"));
    fill(&browser, "envs-0-0", "GREETING");
    fill(&browser, "envs-0-2", "hi from the form");
    fill(&browser, "completions", "2");
    fill(&browser, "parallelism", "3");
    assert_eq!(error_of(&browser, "parallelism"), "Parallelism must be less than or equal to completions (2)");
    fill(&browser, "parallelism", "2");
    browser.screenshot(&screenshot_path("create-job-form-1280"));

    // This server runs jobs as processes, so it needs a command: the form
    // knows (GET /workspace's job_requirements) and sends nothing without.
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_until("the command rule on Command", || {
        error_of(&browser, "command").contains("a command is required").then_some(())
    });
    let focused = browser.execute("return document.activeElement.id;", vec![]);
    assert_eq!(focused, "command", "the focus went to the first problem");
    let (_, jobs) = server.call("GET", "/jobs", &server.admin_token, None);
    assert_eq!(jobs["total"], 0, "nothing was sent: {jobs}");

    // A rule only the server can judge at the moment of creation: the
    // secret a variable references was deleted after the form loaded. The
    // server's 422 lands on that variable and the form keeps what was typed.
    browser.click(&browser.find("#envs-add"));
    fill(&browser, "envs-1-0", "HF_TOKEN");
    choose(&browser, "envs-1-1", "secret");
    choose(&browser, "envs-1-2", "HF_SECRET");
    let (status, _) = server.call("DELETE", "/usersecrets/HF_SECRET", &server.admin_token, None);
    assert_eq!(status, 200);
    fill(&browser, "command", "echo \"$GREETING $JOB_COMPLETION_INDEX\"");
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_until("the server's message on the variable", || {
        error_of(&browser, "envs-1-2").contains("no secret named 'HF_SECRET'").then_some(())
    });
    assert_eq!(value_of(&browser, "job-name").as_deref(), Some("hello-form"), "the form kept what was typed");
    browser.execute(
        "[...document.querySelectorAll('button.remove')].find(b => b.textContent.includes('Environment variables row 2')).click();",
        vec![],
    );

    fill(&browser, "command", "echo \"$GREETING $JOB_COMPLETION_INDEX\"");
    assert_eq!(error_of(&browser, "command"), "");
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_until("the job page", || {
        let url = browser.current_url();
        (url.contains("/jobs/hello-form-") && !url.ends_with("/new")).then_some(url)
    });
    browser.wait_for_text("hello-form");
    let url = browser.current_url();
    let id = url.rsplit('/').next().unwrap().to_string();

    let job = server.wait_for_state(&server.admin_token, &id, JobState::Completed);
    let spec = &job.spec;
    assert_eq!((spec.completions, spec.parallelism), (Some(2), Some(2)));
    assert_eq!(spec.resource_shape.as_deref(), Some("cpu.small"));
    assert_eq!(spec.container.command.as_ref().unwrap()[0], "/bin/sh");
    assert_eq!(spec.envs.as_ref().unwrap()[0].value.as_deref(), Some("hi from the form"));
    assert_eq!(job.metadata.created_by.as_deref(), Some("admin"));

    // Each replica ran the typed command with the typed variable.
    let (status, replicas) = server.call("GET", &format!("/jobs/{id}/replicas"), &server.admin_token, None);
    assert_eq!(status, 200, "{replicas}");
    let mut seen = Vec::new();
    for replica in replicas.as_array().unwrap() {
        let replica_id = replica["id"].as_str().unwrap();
        let (status, log) =
            server.call("GET", &format!("/jobs/{id}/replicas/{replica_id}/log"), &server.admin_token, None);
        assert_eq!(status, 200, "{log}");
        seen.push(log.as_str().unwrap_or_default().trim().to_string());
    }
    seen.sort();
    assert_eq!(seen, ["hi from the form 0", "hi from the form 1"]);

    // Cloning it fills the form again.
    browser.goto(&format!("{}/jobs/new?clone={id}", server.base_url));
    browser.wait_for_text(&format!("Cloned from {id}"));
    browser.wait_until("the cloned name", || (value_of(&browser, "job-name")? == "hello-form").then_some(()));
    assert_eq!(value_of(&browser, "envs-0-0").as_deref(), Some("GREETING"));
    assert_eq!(value_of(&browser, "completions").as_deref(), Some("2"));
}

#[test]
fn the_form_reads_well_at_phone_width_and_shares_drafts() {
    let server = Server::start();
    let browser = Browser::start();
    browser.emulate_viewport(390, 844);
    browser.goto(&server.sign_in_link);
    browser.wait_for_text("Deployments");
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_for_text("Resource shape");
    fill(&browser, "job-name", "phone-draft");
    fill(&browser, "command", "sleep 1");
    fill(&browser, "registry-username", "robot");
    fill(&browser, "registry-password", "hunter2");
    // Nothing is wider than the screen.
    assert_eq!(browser.execute("return window.innerWidth;", vec![]), 390);
    let overflow = browser.execute("return document.documentElement.scrollWidth - window.innerWidth;", vec![]);
    assert!(overflow.as_i64().unwrap_or(1) <= 0, "the page scrolls sideways by {overflow} px");
    browser.screenshot(&screenshot_path("create-job-form-390"));

    // The draft link carries the form but never the password.
    browser.click(&browser.find(".tool-buttons button:nth-child(3)"));
    let link = browser.wait_until("the draft link", || value_of(&browser, "output-text").filter(|v| !v.is_empty()));
    assert!(link.contains("/jobs/new#draft="), "{link}");
    assert!(!link.contains("hunter2"), "{link}");
    browser.goto(&link);
    browser.wait_for_text("shared as a draft");
    browser.wait_until("the draft's name", || (value_of(&browser, "job-name")? == "phone-draft").then_some(()));
    assert_eq!(value_of(&browser, "registry-password").as_deref(), Some(""));
    // The password is needed again: the form says so on submit.
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_until("the password's message", || {
        error_of(&browser, "registry-password").contains("is required when a registry username is set").then_some(())
    });
    browser.screenshot(&screenshot_path("create-job-form-390-draft"));
}

#[test]
fn the_form_follows_the_dark_theme() {
    let server = Server::start();
    let browser = Browser::start();
    browser.goto(&server.sign_in_link);
    browser.wait_for_text("Deployments");
    browser.emulate_color_scheme("dark");
    // Tall enough to see the whole form at once.
    browser.emulate_viewport(1280, 4400);
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_for_text("2048 MiB (2 GiB) for cpu.small");
    browser.click(&browser.find("#envs-add"));
    fill(&browser, "envs-0-0", "LEPTON_X");
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_for_text("problems remain");
    let background = browser.execute("return getComputedStyle(document.body).backgroundColor;", vec![]);
    assert_eq!(background, "rgb(15, 18, 22)", "the dark theme's background");
    browser.screenshot(&screenshot_path("create-job-form-dark"));
}

/// The contract's rules come with the form's first use, as a download of
/// their own: when it fails (a dropped connection on a train), the form
/// stays usable without them, and its next use downloads them. The same
/// holds for the job's writer, which a create downloads.
#[test]
fn a_failed_download_of_the_rules_leaves_the_form_working() {
    let server = Server::start();
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    // From here on no part of the console downloads.
    browser.block_urls(&["*.bin", "*.wasm"]);
    fill(&browser, "job-name", "Bad_Name");
    fill(&browser, "command", "echo hi");
    // The page still answers (its drawing is not stopped): an added
    // variable's row appears.
    browser.click(&browser.find("#envs-add"));
    browser.find("#envs-0-0");
    assert_eq!(error_of(&browser, "job-name"), "", "no rules, no message");
    assert_eq!(browser.text(&browser.find("form.job-form .status")), "");
    // Creating needs the job's writer, another such part: its failed
    // download is a banner, and the form is ready to try again.
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_for_text("a part of the console could not be downloaded");
    browser.wait_until("the button back", || {
        (browser.text(&browser.find("button[type=submit]")) == "Create job").then_some(())
    });
    browser.block_urls(&[]);
    fill(&browser, "job-name", "Bad_Again");
    browser.wait_until("the rules, downloaded at the next use", || {
        (error_of(&browser, "job-name") == "Job name must start with a lowercase letter").then_some(())
    });
}

/// Usable with the keyboard alone: from the top of the page, Tab reaches
/// the fields in reading order, typing fills them, and Enter on the submit
/// button creates the job.
#[test]
fn a_job_can_be_created_with_the_keyboard_alone() {
    let server = Server::start();
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    let mut order = Vec::new();
    let mut tab_to = |wanted: &str| {
        for _ in 0..300 {
            browser.keys("\u{E004}");
            let id = browser.focused_id();
            order.push(id.clone());
            let at_submit = wanted == "submit"
                && browser.execute("return document.activeElement.matches('.job-form button[type=submit]');", vec![])
                    == Value::Bool(true);
            if id == wanted || at_submit {
                return;
            }
        }
        panic!("Tab never reached {wanted}; it went through {order:?}");
    };
    tab_to("job-name");
    browser.keys("keyboard-job");
    tab_to("command");
    browser.keys("echo typed by keyboard");
    tab_to("submit");
    browser.keys("\u{E007}");
    browser.wait_until("the job page", || {
        let url = browser.current_url();
        (url.contains("/jobs/keyboard-job-") && !url.ends_with("/new")).then_some(())
    });
    let id = browser.current_url().rsplit('/').next().unwrap().to_string();
    let job = server.wait_for_state(&server.admin_token, &id, JobState::Completed);
    assert_eq!(job.spec.container.command.unwrap()[2], "echo typed by keyboard");
}

/// A job created with the name left empty is named by the server, readably,
/// and its page shows that name; durations typed in any spelling are read
/// back in words and reach the job as seconds.
#[test]
fn a_job_without_a_name_gets_a_readable_one_and_durations_read_as_typed() {
    let server = Server::start();
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    assert!(browser.page_text().contains("Default: a readable name the server picks, such as brave-otter."));
    fill(&browser, "command", "echo unnamed");
    fill(&browser, "active-deadline", "PT1H30M");
    fill(&browser, "grace-period", "45");
    browser.wait_for_text("PT1H30M is 1 hour 30 minutes.");
    browser.wait_for_text("45 is 45 seconds.");
    fill(&browser, "queue-limit", "3 days");
    browser.wait_until("the duration rule", || {
        error_of(&browser, "queue-limit").contains("must be a duration such as 2h, 90m, 1d, PT4H30M").then_some(())
    });
    fill(&browser, "queue-limit", "P3D");
    browser.screenshot(&screenshot_path("create-job-form-durations"));
    browser.click(&browser.find("button[type=submit]"));
    let id = browser.wait_until("the job page", || {
        let url = browser.current_url();
        let id = url.rsplit('/').next()?.to_string();
        (url.contains("/jobs/") && !url.ends_with("/new") && id.contains('-')).then_some(id)
    });
    let job = server.job(&server.admin_token, &id);
    let name = job.metadata.name.clone().unwrap();
    let words: Vec<&str> = name.split('-').collect();
    assert!(
        words.len() == 2 && words.iter().all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())),
        "{name}"
    );
    assert!(id.starts_with(&format!("{name}-")), "{id}");
    browser.wait_until("the name as the page's heading", || {
        (browser.text(&browser.find(".job-head h1")) == name).then_some(())
    });
    assert_eq!(job.spec.active_deadline_seconds, Some(5400));
    assert_eq!(job.spec.termination_grace_period_seconds, Some(45));
    assert_eq!(job.spec.max_queued_duration_seconds, Some(259_200));
}

/// The element of the template with `id` in the open list, and the input of
/// its parameter `param`.
fn template_input(browser: &Browser, id: &str, param: &str) -> String {
    let selector = format!("[data-template={id}] [data-param={param}]");
    browser.find(&selector);
    browser
        .execute("return document.querySelector(arguments[0]).id;", vec![Value::from(selector)])
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_job_starts_from_a_template_and_the_form_saves_as_one() {
    let server = Server::start();
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));

    // The built-in torchrun template, with a value of the wrong type first:
    // refused at its input, before anything is sent.
    browser.click(&browser.find("[data-tool=templates]"));
    let workers = template_input(&browser, "torchrun", "workers");
    let run = template_input(&browser, "torchrun", "run");
    assert_eq!(value_of(&browser, &workers).as_deref(), Some("1"), "the parameter's default");
    fill(&browser, &workers, "two");
    browser.click(&browser.find("[data-template=torchrun] [data-tool=template-use]"));
    browser.wait_until("the type's error", || (error_of(&browser, &workers) == "must be a number").then_some(()));
    fill(&browser, &workers, "2");
    fill(&browser, &run, "echo rank $NODE_RANK of $NNODES");
    browser.click(&browser.find("[data-template=torchrun] [data-tool=template-use]"));
    browser.wait_for_text("Filled from the template Torchrun: review every field, then create the job.");
    assert!(browser.try_find("[data-template]").is_none(), "the list closes once the form is filled");
    assert_eq!(value_of(&browser, "workers").as_deref(), Some("2"));
    let command = value_of(&browser, "command").unwrap();
    assert!(command.contains("export NNODES=") && command.ends_with("echo rank $NODE_RANK of $NNODES\n"), "{command}");
    browser.click(&browser.find("button[type=submit]"));
    let id = browser.wait_until("the job page", || {
        let url = browser.current_url();
        (url.contains("/jobs/") && !url.ends_with("/new")).then(|| url.rsplit('/').next().unwrap().to_string())
    });
    let job = server.wait_for_state(&server.admin_token, &id, JobState::Completed);
    assert_eq!((job.spec.workers(), job.spec.container.command()[0].as_str()), (2, "/bin/bash"));
    let second = format!("{id}-1-0");
    assert!(server.log_text(&server.admin_token, &id, &second).contains("rank 1 of 2"), "the second worker's log");

    // The job saved as a template from its own page: the form opens filled
    // from it, at "Save as a template", with the focus on the name.
    browser.click(&browser.find("a.save-template"));
    browser.wait_until("the name's input focused", || (browser.focused_id() == "template-name").then_some(()));
    browser.wait_for_text(&format!("Cloned from {id}."));
    browser.type_text(&browser.find("#template-name"), "Torchrun ranks");
    browser.click(&browser.find("[data-tool=template-save]"));
    browser.wait_for_text("Saved as your template Torchrun ranks (id torchrun-ranks).");
    let (_, saved) = server.call("GET", "/templates/private/torchrun-ranks", &server.admin_token, None);
    let spec = &saved["spec"]["content"]["spec"];
    assert!(
        spec["container"]["command"][2].as_str().unwrap().ends_with("echo rank $NODE_RANK of $NNODES\n"),
        "{saved}"
    );
    assert_eq!(spec["workers"], 2, "{saved}");

    // The form saved as a template: a placeholder typed into the command
    // becomes the template's parameter. A name the server refuses says why.
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    fill(&browser, "command", "echo {{greeting}} from the template");
    browser.click(&browser.find("details.import:last-of-type summary"));
    fill(&browser, "template-name", "Greeter <one>");
    browser.click(&browser.find("[data-tool=template-save]"));
    browser.wait_for_text("Not saved: metadata.name: 1 to 64 letters");
    fill(&browser, "template-name", "Greeter");
    browser.click(&browser.find("[data-tool=template-save]"));
    browser.wait_for_text("Saved as your template Greeter (id greeter). It asks for greeting.");
    let (status, saved) = server.call("GET", "/templates/private/greeter", &server.admin_token, None);
    assert_eq!(status, 200);
    assert_eq!(saved["spec"]["content"]["metadata"].get("name"), None, "jobs from it get names of their own: {saved}");

    // A link to the form at that template, as a teammate would follow it.
    browser.goto(&format!("{}/jobs/new?template=greeter", server.base_url));
    browser.find("[data-template=greeter].template-choice.chosen");
    let greeting = template_input(&browser, "greeter", "greeting");
    assert_eq!(browser.focused_id(), greeting, "the chosen template's first input has the focus");
    browser.screenshot(&screenshot_path("create-job-form-templates"));
    browser.click(&browser.find("[data-template=greeter] [data-tool=template-use]"));
    browser.wait_until("the required parameter's error", || {
        (error_of(&browser, &greeting) == "is required" || error_of(&browser, &greeting).contains("required"))
            .then_some(())
    });
    fill(&browser, &greeting, "hello");
    browser.click(&browser.find("[data-template=greeter] [data-tool=template-use]"));
    browser.wait_for_text("Filled from the template Greeter");
    assert_eq!(value_of(&browser, "command").as_deref(), Some("echo hello from the template"));
    assert_eq!(value_of(&browser, "job-name").as_deref(), Some(""), "the template keeps no job name");

    // Deleted from the list at the second click: the first asks again.
    browser.click(&browser.find("[data-tool=templates]"));
    let delete = "[data-template=greeter] [data-tool=template-delete]";
    browser.click(&browser.find(delete));
    browser
        .wait_until("the second question", || (browser.text(&browser.find(delete)) == "Delete for good").then_some(()));
    let (status, _) = server.call("GET", "/templates/private/greeter", &server.admin_token, None);
    assert_eq!(status, 200, "one click deletes nothing");
    browser.click(&browser.find(delete));
    browser.wait_until("the template gone", || browser.try_find("[data-template=greeter]").is_none().then_some(()));
    let (status, _) = server.call("GET", "/templates/private/greeter", &server.admin_token, None);
    assert_eq!(status, 404);
}

/// The path of a job file of another tool (`tests/fixtures/convert/`).
fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/convert").join(name).display().to_string()
}

/// Puts `text` in the form's import box as if typed or pasted.
fn paste_import(browser: &Browser, text: impl Into<String>) {
    browser.execute(
        "const e = document.getElementById('import-text'); e.value = arguments[0]; \
         e.dispatchEvent(new Event('input', {bubbles: true}));",
        vec![Value::from(text.into())],
    );
}

/// The job files people arrive with, imported into the form: a Kubernetes
/// Job chosen as a file fills the form, lists what became of each of its
/// fields with its line, and runs as created; an NVCF task pasted is told
/// by its fields and says why no shape fits; a dstack task with a broken
/// line is refused naming it; text of no known kind asks for its format,
/// and the format chosen is the one used.
#[test]
fn job_files_of_other_tools_are_imported_with_a_note_per_field() {
    let server = Server::start();
    let token = &server.admin_token;
    let (status, body) = server.call("POST", "/usersecrets", token, Some(&json!([{"name": "api_key", "value": "k"}])));
    assert_eq!(status, 200, "{body}");
    let browser = Browser::start();
    browser.sign_in(&server, token);
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    browser.click(&browser.find("details.import summary"));

    // A Kubernetes Job, chosen as a file: the format is told from it.
    browser.type_text(&browser.find("details.import input[type=file]"), &fixture("job.yaml"));
    browser.wait_for_text("Imported the Kubernetes Job job.yaml:");
    assert_eq!(value_of(&browser, "job-name").as_deref(), Some("pi"));
    assert_eq!(value_of(&browser, "completions").as_deref(), Some("2"));
    // Its limits are requirements: the shape field offers the smallest shape
    // that meets them and says which; the server chooses the same.
    assert_eq!(value_of(&browser, "resource-shape").as_deref(), Some(""));
    // The chooser's words come with the form's rules, fetched on its first
    // use: waited for, not read at once.
    browser.wait_for_text("that meet 0.5 or more CPU, 0.5 GiB or more memory");
    let page = browser.page_text();
    let said = page.split("shape '").nth(1).and_then(|rest| rest.split('\'').next()).map(String::from);
    browser.execute("document.getElementById('resource-shape').scrollIntoView();", vec![]);
    browser.screenshot(&screenshot_path("create-job-form-requirements"));
    let notes = browser.text(&browser.find("#import-notes"));
    assert!(notes.contains("What became of each field of the Kubernetes Job job.yaml"), "{notes}");
    assert!(notes.contains("line 34 · spec.template.spec.containers[0].volumeMounts[0]"), "{notes}");
    assert!(notes.contains("not carried over"), "{notes}");
    let dropped = browser.find_all("#import-notes li.dropped").len();
    assert!(dropped >= 1, "{notes}");
    browser.execute("document.getElementById('import-notes').scrollIntoView();", vec![]);
    browser.screenshot(&screenshot_path("create-job-form-import"));
    browser.click(&browser.find("button[type=submit]"));
    let id = browser.wait_until("the job page", || {
        let url = browser.current_url();
        (url.contains("/jobs/pi-")).then(|| url.rsplit('/').next().unwrap().to_string())
    });
    server.wait_for_state(token, &id, JobState::Completed);
    assert!(server.log_text(token, &id, &format!("{id}-1-0")).contains("index 1 of the pi job"));
    let (_, job) = server.call("GET", &format!("/jobs/{id}"), token, None);
    assert_eq!(job["spec"]["resource_shape"].as_str().map(String::from), said, "the shape the form named");

    // An NVCF task, pasted: told by its fields; no shape here has an H100.
    browser.goto(&format!("{}/jobs/new", server.base_url));
    browser.wait_until("the shapes", || (value_of(&browser, "resource-shape")? == "cpu.small").then_some(()));
    browser.click(&browser.find("details.import summary"));
    let nvcf = std::fs::read_to_string(fixture("task.json")).unwrap();
    paste_import(&browser, nvcf);
    browser.click(&browser.find("[data-tool=import]"));
    browser.wait_for_text("Imported the NVCF task:");
    let notes = browser.text(&browser.find("#import-notes"));
    assert!(notes.contains("line 3 · gpuSpecification"), "{notes}");
    assert!(notes.contains("no shape of this workspace has 1 × H100"), "{notes}");
    assert!(!browser.page_text().contains("nvapi-fixture-secret"), "a secret's value is never shown back");

    // A dstack task with its own entrypoint and user: the commands follow
    // the entrypoint's words, and the user is refused in the form as the
    // server refuses it (this server runs processes), among the problems
    // that have no input of their own.
    let task =
        "type: task\nname: as-user\nimage: busybox\nuser: \"1000\"\nentrypoint: echo -n\ncommands:\n  - one two\n";
    paste_import(&browser, task);
    browser.click(&browser.find("[data-tool=import]"));
    browser.wait_for_text("Imported the dstack task:");
    let notes = browser.text(&browser.find("#import-notes"));
    assert!(notes.contains("line 4 · user") && notes.contains("line 5 · entrypoint"), "{notes}");
    assert_eq!(value_of(&browser, "command").as_deref(), Some("echo -n 'one two'"));
    browser.wait_until("the user's problem", || {
        let said = browser.text(&browser.find("#form-problems"));
        said.contains("is a user inside the container, and this server runs replicas as plain processes").then_some(())
    });

    // A dstack task with a line that cannot be read: refused, naming it;
    // nothing in the form changes.
    let broken = "type: task\nname: [unclosed\ncommands: []\n";
    paste_import(&browser, broken);
    browser.click(&browser.find("[data-tool=import]"));
    browser.wait_until("the refusal", || {
        let said = browser.text(&browser.find("#import-error"));
        (said.starts_with("This dstack task cannot be imported: body: line ")).then_some(())
    });
    assert_eq!(value_of(&browser, "job-name").as_deref(), Some("as-user"), "the form keeps what it held");
    assert!(browser.try_find("#import-notes").is_none(), "the last file's notes are gone");

    // Text of no known kind: the format is asked for, then used.
    paste_import(&browser, "name: unknown-kind\nimage: busybox\n");
    browser.click(&browser.find("[data-tool=import]"));
    browser.wait_until("the question", || {
        browser.text(&browser.find("#import-error")).contains("choose its format above").then_some(())
    });
    choose(&browser, "import-format", "dstack");
    browser.click(&browser.find("[data-tool=import]"));
    browser.wait_until("the chosen format's refusal", || {
        let said = browser.text(&browser.find("#import-error"));
        said.contains("This dstack task cannot be imported: type: line").then_some(())
    });
}
