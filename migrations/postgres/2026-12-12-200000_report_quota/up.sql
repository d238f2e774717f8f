-- Reports are rate limited per contact (docs/api.md, "Moderation"): at
-- most CONFAB_REPORTS_PER_HOUR new reports a UTC hour, all the contact's
-- tokens together. One counter per reporter, of the hour it counts, raised
-- in the transaction that files a new report and refusing past the limit
-- under its row lock (queries/moderation.rs), so that reports filed at
-- once never pass it together and a refused one writes nothing. One row
-- per contact who ever reported, reused hour after hour; it goes with the
-- contact.
CREATE TABLE report_quota (
    contact_id UUID PRIMARY KEY REFERENCES contacts (id) ON DELETE CASCADE,
    -- Whole hours since the Unix epoch, UTC: the hour `filed` counts.
    hour       BIGINT NOT NULL,
    -- New reports the contact filed that hour.
    filed      BIGINT NOT NULL
);
