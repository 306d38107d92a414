DROP TABLE herald_host;
