# Writes questions.jsonl: the questions, gold queries and labelled predictions
# over music.sqlite and sales.sqlite, each query checked with sqlite3.
# Run from this directory: python3 make_questions.py
import json, subprocess
SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 100000000000) SELECT count(*) FROM c;"
Q = [
 # (db, question, gold, [(label, prediction)])
 ("music.sqlite","How many tracks are there?","SELECT count(*) FROM Track;",
   [("right","SELECT COUNT(TrackId) FROM Track;"),("wrong","SELECT count(*) FROM Album;")]),
 ("music.sqlite","List the names of all genres.","SELECT Name FROM Genre;",
   [("right","SELECT Name FROM Genre;"),("reordered","SELECT Name FROM Genre ORDER BY Name DESC;"),("error","SELECT Nme FROM Genre;")]),
 ("music.sqlite","List genre names in alphabetical order.","SELECT Name FROM Genre ORDER BY Name;",
   [("right","SELECT g.Name FROM Genre AS g ORDER BY g.Name ASC;"),("reordered","SELECT Name FROM Genre;")]),
 ("music.sqlite","Which albums did AC/DC record?","SELECT a.Title FROM Album a JOIN Artist r ON r.ArtistId = a.ArtistId WHERE r.Name = 'AC/DC';",
   [("right","SELECT Title FROM Album WHERE ArtistId = (SELECT ArtistId FROM Artist WHERE Name = 'AC/DC');"),("wrong","SELECT Title FROM Album WHERE ArtistId = 2;")]),
 ("music.sqlite","How many albums does each artist have? Artist name and count.","SELECT r.Name, count(*) FROM Album a JOIN Artist r USING (ArtistId) GROUP BY r.ArtistId;",
   [("right","SELECT Artist.Name, COUNT(Album.AlbumId) FROM Artist JOIN Album ON Album.ArtistId = Artist.ArtistId GROUP BY Artist.Name;"),
    ("reordered","SELECT r.Name, count(*) AS n FROM Album a JOIN Artist r USING (ArtistId) GROUP BY r.ArtistId ORDER BY n DESC, r.Name;"),
    ("wrong","SELECT r.Name, count(*) FROM Track t JOIN Album a USING (AlbumId) JOIN Artist r USING (ArtistId) GROUP BY r.ArtistId;")]),
 ("music.sqlite","What is the longest track's name?","SELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 1;",
   [("right","SELECT Name FROM Track WHERE Milliseconds = (SELECT max(Milliseconds) FROM Track);"),("wrong","SELECT Name FROM Track ORDER BY Milliseconds LIMIT 1;")]),
 ("music.sqlite","What is the average track length in seconds, per media type? Media type and average.","SELECT m.Name, avg(t.Milliseconds) / 1000.0 FROM Track t JOIN MediaType m USING (MediaTypeId) GROUP BY m.MediaTypeId;",
   [("right","SELECT MediaType.Name, AVG(Track.Milliseconds / 1000.0) FROM MediaType JOIN Track ON Track.MediaTypeId = MediaType.MediaTypeId GROUP BY MediaType.Name;"),
    ("wrong","SELECT m.Name, avg(t.Milliseconds) FROM Track t JOIN MediaType m USING (MediaTypeId) GROUP BY m.MediaTypeId;"),
    ("slow",SLOW)]),
 ("music.sqlite","Which tracks are longer than ten minutes?","SELECT Name FROM Track WHERE Milliseconds > 600000;",
   [("right","SELECT Name FROM Track WHERE Milliseconds / 1000.0 / 60 > 10;"),("wrong","SELECT Name FROM Track WHERE Milliseconds > 60000;")]),
 ("music.sqlite","Name the five shortest tracks, shortest first.","SELECT Name FROM Track ORDER BY Milliseconds, TrackId LIMIT 5;",
   [("right","SELECT Name FROM Track ORDER BY Milliseconds ASC, TrackId ASC LIMIT 5;"),("reordered","SELECT Name FROM (SELECT Name, Milliseconds, TrackId FROM Track ORDER BY Milliseconds, TrackId LIMIT 5) ORDER BY Name;")]),
 ("music.sqlite","How many tracks have no composer?","SELECT count(*) FROM Track WHERE Composer IS NULL;",
   [("right","SELECT COUNT(*) FROM Track WHERE Composer IS NULL;"),("wrong","SELECT count(Composer) FROM Track;"),("error","SELECT count(*) FROM Tracks WHERE Composer IS NULL;")]),
 ("music.sqlite","Total size in megabytes of every album, album title and size.","SELECT a.Title, sum(t.Bytes) / 1048576.0 FROM Album a JOIN Track t USING (AlbumId) GROUP BY a.AlbumId;",
   [("right","SELECT Album.Title, SUM(Track.Bytes) / 1024.0 / 1024.0 FROM Album JOIN Track ON Track.AlbumId = Album.AlbumId GROUP BY Album.AlbumId;"),
    ("wrong","SELECT a.Title, sum(t.Bytes) / 1000000.0 FROM Album a JOIN Track t USING (AlbumId) GROUP BY a.AlbumId;")]),
 ("music.sqlite","Which genre has the most tracks?","SELECT g.Name FROM Track t JOIN Genre g USING (GenreId) GROUP BY g.GenreId ORDER BY count(*) DESC LIMIT 1;",
   [("right","SELECT Name FROM Genre WHERE GenreId = (SELECT GenreId FROM Track GROUP BY GenreId ORDER BY COUNT(*) DESC LIMIT 1);"),("slow",SLOW)]),
 ("music.sqlite","List every artist whose name starts with 'A'.","SELECT Name FROM Artist WHERE Name LIKE 'A%';",
   [("right","SELECT Name FROM Artist WHERE substr(Name, 1, 1) = 'A';"),("reordered","SELECT Name FROM Artist WHERE Name LIKE 'A%' ORDER BY Name DESC;"),("error","SELECT Name FROM Artist WHERE Name LIKE 'A%' GROUP;")]),
 ("music.sqlite","How many distinct composers are there?","SELECT count(DISTINCT Composer) FROM Track;",
   [("right","SELECT COUNT(*) FROM (SELECT DISTINCT Composer FROM Track WHERE Composer IS NOT NULL);"),("wrong","SELECT count(Composer) FROM Track;")]),
 ("music.sqlite","Which albums have more than 15 tracks? Title and track count, most tracks first.","SELECT a.Title, count(*) AS n FROM Album a JOIN Track t USING (AlbumId) GROUP BY a.AlbumId HAVING n > 15 ORDER BY n DESC, a.Title;",
   [("right","SELECT Album.Title, COUNT(*) AS c FROM Track JOIN Album USING (AlbumId) GROUP BY AlbumId HAVING c > 15 ORDER BY c DESC, Album.Title;"),
    ("reordered","SELECT a.Title, count(*) AS n FROM Album a JOIN Track t USING (AlbumId) GROUP BY a.AlbumId HAVING n > 15;")]),
 ("music.sqlite","What is the total price of all tracks of the album 'Let There Be Rock'?","SELECT sum(UnitPrice) FROM Track WHERE AlbumId = (SELECT AlbumId FROM Album WHERE Title = 'Let There Be Rock');",
   [("right","SELECT SUM(t.UnitPrice) FROM Track t JOIN Album a ON a.AlbumId = t.AlbumId WHERE a.Title = 'Let There Be Rock';"),("wrong","SELECT count(*) FROM Track WHERE AlbumId = 4;")]),
 ("music.sqlite","List the media types used by no track.","SELECT Name FROM MediaType WHERE MediaTypeId NOT IN (SELECT MediaTypeId FROM Track);",
   [("right","SELECT m.Name FROM MediaType m LEFT JOIN Track t ON t.MediaTypeId = m.MediaTypeId WHERE t.TrackId IS NULL;"),("wrong","SELECT Name FROM MediaType;")]),
 ("music.sqlite","For each genre, the number of tracks longer than five minutes, genres with none left out.","SELECT g.Name, count(*) FROM Track t JOIN Genre g USING (GenreId) WHERE t.Milliseconds > 300000 GROUP BY g.GenreId;",
   [("right","SELECT Genre.Name, COUNT(Track.TrackId) FROM Genre JOIN Track ON Track.GenreId = Genre.GenreId WHERE Track.Milliseconds > 5 * 60 * 1000 GROUP BY Genre.Name;"),
    ("error","SELECT g.Name, count(*) FROM Track t JOIN Genre g USING (GenreId) WHERE t.Milliseconds > 300000 GROUP BY;")]),
 ("sales.sqlite","How many customers are there in each country? Country and count.","SELECT Country, count(*) FROM Customer GROUP BY Country;",
   [("right","SELECT Country, COUNT(CustomerId) FROM Customer GROUP BY Country;"),("reordered","SELECT Country, count(*) AS n FROM Customer GROUP BY Country ORDER BY n DESC;"),("wrong","SELECT BillingCountry, count(*) FROM Invoice GROUP BY BillingCountry;")]),
 ("sales.sqlite","What is the total of all invoices?","SELECT round(sum(Total), 2) FROM Invoice;",
   [("right","SELECT ROUND(SUM(Total), 2) FROM Invoice;"),("right","SELECT sum(Total) FROM Invoice;"),("wrong","SELECT round(avg(Total), 2) FROM Invoice;")]),
 ("sales.sqlite","Which employees report to no one?","SELECT FirstName, LastName FROM Employee WHERE ReportsTo IS NULL;",
   [("right","SELECT FirstName, LastName FROM Employee WHERE ReportsTo IS NULL;"),("error","SELECT FirstName, LastName FROM Employee WHERE ReportsTo = NULL AND;")]),
 ("sales.sqlite","The three customers who spent the most, highest first: first name, last name, total.","SELECT c.FirstName, c.LastName, round(sum(i.Total), 2) AS s FROM Customer c JOIN Invoice i USING (CustomerId) GROUP BY c.CustomerId ORDER BY s DESC, c.CustomerId LIMIT 3;",
   [("right","SELECT Customer.FirstName, Customer.LastName, ROUND(SUM(Invoice.Total), 2) AS spent FROM Invoice JOIN Customer ON Customer.CustomerId = Invoice.CustomerId GROUP BY Customer.CustomerId ORDER BY spent DESC, Customer.CustomerId LIMIT 3;"),
    ("reordered","SELECT * FROM (SELECT c.FirstName, c.LastName, round(sum(i.Total), 2) AS s FROM Customer c JOIN Invoice i USING (CustomerId) GROUP BY c.CustomerId ORDER BY s DESC, c.CustomerId LIMIT 3) ORDER BY s;"),
    ("slow",SLOW)]),
 ("sales.sqlite","How many invoice lines does each invoice have, for invoices 1 to 5? Invoice id and count.","SELECT InvoiceId, count(*) FROM InvoiceLine WHERE InvoiceId BETWEEN 1 AND 5 GROUP BY InvoiceId;",
   [("right","SELECT InvoiceId, COUNT(InvoiceLineId) FROM InvoiceLine WHERE InvoiceId <= 5 GROUP BY InvoiceId;"),("wrong","SELECT InvoiceId, sum(Quantity * 2) FROM InvoiceLine WHERE InvoiceId <= 5 GROUP BY InvoiceId;")]),
 ("sales.sqlite","Which cities have customers from Brazil?","SELECT DISTINCT City FROM Customer WHERE Country = 'Brazil';",
   [("right","SELECT City FROM Customer WHERE Country = 'Brazil' GROUP BY City;"),("wrong","SELECT City FROM Customer WHERE Country = 'Brasil';")]),
 ("sales.sqlite","Average invoice total per billing country, as two decimals.","SELECT BillingCountry, round(avg(Total), 2) FROM Invoice GROUP BY BillingCountry;",
   [("right","SELECT BillingCountry, ROUND(AVG(Total), 2) FROM Invoice GROUP BY 1;"),("wrong","SELECT BillingCountry, avg(Total) FROM Invoice GROUP BY BillingCountry;"),("error","SELECT BillingCountry, round(avg(Total), 2) FROM Invoices GROUP BY BillingCountry;")]),
 ("sales.sqlite","How many customers does each support employee look after? Employee last name and count.","SELECT e.LastName, count(*) FROM Customer c JOIN Employee e ON e.EmployeeId = c.SupportRepId GROUP BY e.EmployeeId;",
   [("right","SELECT Employee.LastName, COUNT(Customer.CustomerId) FROM Employee JOIN Customer ON Customer.SupportRepId = Employee.EmployeeId GROUP BY Employee.EmployeeId;"),
    ("wrong","SELECT e.LastName, count(*) FROM Employee e JOIN Employee m ON m.ReportsTo = e.EmployeeId GROUP BY e.EmployeeId;")]),
 ("sales.sqlite","The date of the first invoice.","SELECT min(InvoiceDate) FROM Invoice;",
   [("right","SELECT InvoiceDate FROM Invoice ORDER BY InvoiceDate LIMIT 1;"),("wrong","SELECT max(InvoiceDate) FROM Invoice;")]),
 ("sales.sqlite","Customers with no company, counted.","SELECT count(*) FROM Customer WHERE Company IS NULL;",
   [("right","SELECT COUNT(*) FROM Customer WHERE Company IS NULL;"),("slow",SLOW)]),
 ("sales.sqlite","List employees with their manager's last name, employees without a manager included.","SELECT e.LastName, m.LastName FROM Employee e LEFT JOIN Employee m ON m.EmployeeId = e.ReportsTo;",
   [("right","SELECT e.LastName, (SELECT m.LastName FROM Employee m WHERE m.EmployeeId = e.ReportsTo) FROM Employee e;"),("wrong","SELECT e.LastName, m.LastName FROM Employee e JOIN Employee m ON m.EmployeeId = e.ReportsTo;")]),
 ("sales.sqlite","Invoice totals above 15, highest first: invoice id and total.","SELECT InvoiceId, Total FROM Invoice WHERE Total > 15 ORDER BY Total DESC, InvoiceId;",
   [("right","SELECT InvoiceId, Total FROM Invoice WHERE Total > 15.0 ORDER BY Total DESC, InvoiceId ASC;"),("reordered","SELECT InvoiceId, Total FROM Invoice WHERE Total > 15 ORDER BY InvoiceId;")]),
]
import re
def orders(q):
    # the gold orders at its outermost level: ORDER BY outside parentheses
    d=0; out=''
    for ch in q:
        if ch=='(': d+=1
        elif ch==')': d-=1
        elif d==0: out+=ch
    return 'ORDER BY' in ' '.join(out.upper().split())
def run(db,q):
    p=subprocess.run(['sqlite3','-bail','-batch','-list','-noheader','-nullvalue','NULL',db,q],capture_output=True,text=True,timeout=5)
    return p.returncode,p.stdout,p.stderr
rows=[]; total=0; good=0
for i,(db,question,gold,preds) in enumerate(Q):
    rc,out,err=run(db,gold)
    assert rc==0 and out.strip(), (question,err,out)
    exp=[]; labels=[]
    for lab,pred in preds:
        if lab=='right': e=1.0
        elif lab=='reordered': e=0.0 if orders(gold) else 1.0
        else: e=0.0
        if lab not in ('slow',):
            rc2,o2,e2=run(db,pred)
            if lab=='error': assert rc2!=0,(question,pred)
            else: assert rc2==0,(question,pred,e2)
        exp.append(e); labels.append(lab); total+=1; good+=e
    gt={"gold":gold,"database_file":db}
    rows.append({"data_source":"chinook-"+db.split('.')[0],"prompt":[{"role":"user","content":question}],"ability":"sql",
        "reward_model":{"style":"rule","ground_truth":json.dumps(gt)},
        "extra_info":{"index":i,"labels":labels,"expected_scores":exp,"gold_orders":orders(gold)},
        "responses":["```sql\n%s\n```"%p for _,p in preds]})
with open('questions.jsonl','w') as f:
    for r in rows: f.write(json.dumps(r)+"\n")
print(len(rows),'questions',total,'predictions','execution accuracy by hand',good,'/',total,'=',good/total)
from collections import Counter
print(Counter(l for r in rows for l in r['extra_info']['labels']))
