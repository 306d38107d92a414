DROP INDEX herald_registration_due;
