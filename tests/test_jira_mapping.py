"""The Jira mapping file: validation names the key; the most specific entry wins; settings and doctor."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import doctor_warnings
from bot.settings.config import Settings, SettingsError
from bot.settings.jira_mapping import MappingError, load_mapping, parse_mapping

GOOD = """
projects:
  - site: https://Example.atlassian.net/
    project: SHOP
    github: octo/shop
    installation: 7
    transitions: {pr_opened: In Review}
  - site: https://example.atlassian.net
    project: SHOP
    component: Payments
    git: https://git.example.com/payments.git
    credential: PAY
    labels: {fix: bot-fix}
    commands: {allow: [alice], roles: []}
"""


def test_resolve_prefers_the_component_entry_and_normalizes_the_site() -> None:
    mapping = parse_mapping(GOOD)
    shop = mapping.resolve("https://example.atlassian.net", "SHOP", ["UI"])
    assert shop is not None and shop.github == "octo/shop" and shop.installation == 7
    assert shop.labels == {"fix": "reprobot-fix", "reproduce": "reprobot-reproduce"}
    assert shop.roles == ("Administrators", "Developers") and shop.transitions == {"pr_opened": "In Review"}
    pay = mapping.resolve("HTTPS://EXAMPLE.atlassian.net/", "SHOP", ["UI", "Payments"])
    assert pay is not None and pay.git == "https://git.example.com/payments.git" and pay.credential == "PAY"
    assert pay.mode_for_labels(["x", "bot-fix"]) == "fix" and pay.mode_for_labels(["reprobot-fix"]) is None
    assert pay.roles == () and pay.allow == ("alice",)
    assert mapping.resolve("https://example.atlassian.net", "OPS") is None
    assert mapping.resolve("https://other.example", "SHOP") is None
    assert mapping.resolve("not a url", "SHOP") is None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("projects: {}", "projects"),
        ("sites: []", "sites"),
        ("projects: [{project: SHOP, github: a/b, installation: 1}]", "projects[0].site"),
        ("projects: [{site: ftp://x, project: SHOP, github: a/b, installation: 1}]", "projects[0].site"),
        ("projects: [{site: https://x, project: shop, github: a/b, installation: 1}]", "projects[0].project"),
        ("projects: [{site: https://x, project: SHOP}]", "projects[0]"),
        ("projects: [{site: https://x, project: SHOP, github: a/b, git: https://g/x.git}]", "projects[0]"),
        ("projects: [{site: https://x, project: SHOP, github: ab, installation: 1}]", "projects[0].github"),
        ("projects: [{site: https://x, project: SHOP, github: a/b}]", "projects[0].installation"),
        (
            "projects: [{site: https://x, project: SHOP, git: https://g/x.git, installation: 1}]",
            "projects[0].installation",
        ),
        ("projects: [{site: https://x, project: SHOP, git: 'C:\\\\x'}]", "projects[0].git"),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, credential: X}]",
            "projects[0].credential",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, on_create: always}]",
            "projects[0].on_create",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, labels: {fix: a b}}]",
            "projects[0].labels.fix",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, labels: {close: x}}]",
            "projects[0].labels.close",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, transitions: {pr_closed: X}}]",
            "projects[0].transitions.pr_closed",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, commands: {roles: Dev}}]",
            "projects[0].commands.roles",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, commands: {who: [a]}}]",
            "projects[0].commands.who",
        ),
        (
            "projects: [{site: https://x, project: SHOP, github: a/b, installation: 1, colour: red}]",
            "projects[0].colour",
        ),
        (
            "projects:\n - {site: https://x, project: SHOP, github: a/b, installation: 1}\n"
            " - {site: https://x/, project: SHOP, github: c/d, installation: 2}",
            "projects[1]",
        ),
        ("projects: [", "(file)"),
    ],
)
def test_errors_name_the_key(text: str, key: str) -> None:
    with pytest.raises(MappingError) as caught:
        parse_mapping(text, "jira.yml")
    assert caught.value.key == key, str(caught.value)
    assert f"`{key}`" in str(caught.value) and "jira.yml" in str(caught.value)


def test_load_mapping_reports_an_unreadable_file(tmp_path: Path) -> None:
    assert load_mapping(None).projects == ()
    with pytest.raises(MappingError, match="cannot be read"):
        load_mapping(tmp_path / "missing.yml")


def test_jira_settings_from_the_environment(tmp_path: Path) -> None:
    env = {
        "REPROBOT_JIRA_WEBHOOK_SECRET": "https://A.example/jira=s1==, http://b.example=s2",
        "REPROBOT_JIRA_EMAIL": "bot@example.com",
        "REPROBOT_JIRA_API_TOKEN": "api-token",
        "REPROBOT_GIT_CREDENTIAL_PAY": "deploy:pay-token",
        "REPROBOT_JIRA_MAPPING": str(tmp_path / "m.yml"),
    }
    s = Settings.from_env(env)
    assert s.jira_webhook_secrets == (("https://a.example/jira", "s1=="), ("http://b.example", "s2"))
    assert s.git_credential("PAY") == "deploy:pay-token" and s.jira_mapping == tmp_path / "m.yml"
    assert s.git_credential("OTHER") is None and hash(s)  # settings stay hashable
    for secret in ("s1==", "s2", "api-token", "pay-token", "deploy:pay-token"):
        assert secret in s.secret_values() and secret not in repr(s)
    assert Settings.from_env({"REPROBOT_JIRA_WEBHOOK_SECRET": "one=secret"}).jira_webhook_secrets == (
        (None, "one=secret"),
    )
    with pytest.raises(SettingsError, match="JIRA_WEBHOOK_SECRET"):
        Settings.from_env({"REPROBOT_JIRA_WEBHOOK_SECRET": "https://a.example=s1 loose"})
    with pytest.raises(SettingsError, match="go together"):
        Settings.from_env({"REPROBOT_JIRA_EMAIL": "bot@example.com"})
    with pytest.raises(SettingsError, match="ALLOW_UNSIGNED"):
        Settings.from_env({"REPROBOT_JIRA_ALLOW_UNSIGNED": "maybe"})


def test_doctor_warns_about_unsigned_jira_and_a_bad_mapping(tmp_path: Path) -> None:
    assert doctor_warnings(Settings(data_dir=tmp_path)) == []
    bad = tmp_path / "m.yml"
    bad.write_text("projects: [{project: SHOP}]")
    warnings = doctor_warnings(
        Settings.from_env({"REPROBOT_JIRA_ALLOW_UNSIGNED": "1", "REPROBOT_JIRA_MAPPING": str(bad)})
    )
    assert len(warnings) == 2 and "REPROBOT_JIRA_ALLOW_UNSIGNED" in warnings[0] and "projects[0].site" in warnings[1]


def test_doctor_names_the_sites_that_accept_unsigned_deliveries(tmp_path: Path) -> None:
    """Issue 28: with per-site secrets for A and C, unsigned mode covers B alone, and doctor says so by name."""
    mapping = tmp_path / "m.yml"
    sites = ("https://a.example", "https://b.example", "https://c.example")
    rows = "".join(f"  - {{site: '{site}', project: SHOP, git: 'https://git.example.com/x.git'}}\n" for site in sites)
    mapping.write_text("projects:\n" + rows)
    env = {
        "REPROBOT_JIRA_ALLOW_UNSIGNED": "1",
        "REPROBOT_JIRA_MAPPING": str(mapping),
        "REPROBOT_JIRA_WEBHOOK_SECRET": "https://a.example=sa https://c.example=sc",
    }
    (warning,) = doctor_warnings(Settings.from_env(env))
    accepted, _, checked = warning.partition("always checked")
    assert (
        "https://b.example" in accepted and "https://a.example" not in accepted and "https://c.example" not in accepted
    )
    assert "https://a.example" in checked and "https://c.example" in checked
    assert "sa" not in warning.split() and "sc" not in warning.split()  # the secrets themselves are never shown
