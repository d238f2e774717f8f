DROP FUNCTION confab_quoted_message(UUID);
