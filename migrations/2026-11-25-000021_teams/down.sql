DROP TABLE team_grants;
DROP TABLE team_members;
