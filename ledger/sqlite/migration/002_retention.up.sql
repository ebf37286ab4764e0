-- 002: retention. Purge and Forget scan terminal actions by age.
CREATE INDEX actions_terminal_created ON actions (created_at) WHERE state IN ('succeeded', 'rejected');
