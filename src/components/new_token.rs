//! A token just made, shown this once, with the lines that use it: the
//! console's sign-in takes it as it is, and the `lep` CLI through
//! `lep workspace login` or three variables (docs/lep.md).

use leptos::prelude::*;

use crate::api::people::workspace_id;

/// The lines that give `token` to `lep`, for the workspace `workspace` of
/// the server at `origin`.
pub fn lep_lines(workspace: &str, token: &str, origin: &str) -> String {
    format!(
        "lep workspace login -i {workspace} -t {token} --workspace-url {origin}/api/v2\n\n\
         # or, in scripts and CI:\n\
         export LEPTON_WORKSPACE_ID={workspace}\n\
         export LEPTON_WORKSPACE_TOKEN={token}\n\
         export LEPTON_WORKSPACE_URL={origin}/api/v2"
    )
}

/// The new token in a box to copy from, and how to use it.
#[component]
pub fn NewToken(token: String) -> impl IntoView {
    let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
    let workspace = RwSignal::new(String::from("jobdeck"));
    leptos::task::spawn_local(async move {
        if let Ok(answer) = workspace_id().await {
            workspace.set(answer.id);
        }
    });
    let shown = token.clone();
    let lines = move || lep_lines(&workspace.get(), &token, &origin);
    view! {
        <div class="card new-token" role="status">
            <p>
                <strong>"Copy this token now:"</strong>
                " it is shown only this once. It signs in to the console (paste it on the sign-in page) and to the lep CLI."
            </p>
            <input class="mono" style="width:100%" readonly aria-label="The new token" prop:value=shown/>
            <pre class="mono" style="white-space:pre-wrap;word-break:break-all">{lines}</pre>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_lep_lines_name_the_workspace_the_token_and_the_api() {
        let lines = lep_lines("team", "jd_x", "https://jobdeck.example.com");
        assert!(
            lines.starts_with("lep workspace login -i team -t jd_x --workspace-url https://jobdeck.example.com/api/v2")
        );
        assert!(lines.contains("export LEPTON_WORKSPACE_TOKEN=jd_x\n"));
        assert!(lines.ends_with("LEPTON_WORKSPACE_URL=https://jobdeck.example.com/api/v2"));
    }
}
